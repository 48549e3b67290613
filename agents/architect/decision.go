package architect

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// The protocol words of a decision on a sprint pull request (spec 50
// §3.11 W-AR-1) and the footer that tells humans about them.
const (
	acceptWord   = "ACCEPT"
	rejectPrefix = "REJECT:"
	// Footer is the architect's first comment on a new sprint pull
	// request, exactly as the reference posts it.
	Footer = "Reply `ACCEPT` to proceed with design questions, or `REJECT: <reason>` to decline."
)

// Verdict is what a decision decides.
type Verdict string

// Verdicts.
const (
	Accept Verdict = "accept"
	Reject Verdict = "reject"
)

// Decision is one human decision on a sprint pull request: a comment
// whose first non-blank line is ACCEPT or REJECT: <reason>, or a formal
// review that approves or requests changes.
type Decision struct {
	// ID names its source: comment-<id> or review-<id>.
	ID      string
	Verdict Verdict
	Reason  string
	Author  string
	At      time.Time
}

// people tells the humans allowed to decide from everyone else. A login
// in the bot set never decides, even when it is also listed as a human.
type people struct {
	deciders map[string]bool
	bots     map[string]bool
}

func newPeople(deciders, bots []string, me string) people {
	p := people{deciders: map[string]bool{}, bots: map[string]bool{strings.ToLower(me): true}}
	for _, d := range deciders {
		p.deciders[strings.ToLower(d)] = true
	}
	for _, b := range bots {
		p.bots[strings.ToLower(b)] = true
	}
	return p
}

// human reports whether login may decide and answer on sprint pull
// requests.
func (p people) human(login string) bool {
	l := strings.ToLower(login)
	return l != "" && p.deciders[l] && !p.bots[l]
}

// parseDecision reads a comment body: the first non-blank line, trimmed,
// is exactly ACCEPT, or starts with REJECT: followed by the reason.
func parseDecision(body string) (Verdict, string, bool) {
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		switch {
		case line == acceptWord:
			return Accept, "", true
		case strings.HasPrefix(line, rejectPrefix):
			reason := strings.TrimSpace(strings.TrimPrefix(line, rejectPrefix))
			if rest := restAfterFirstLine(body); rest != "" {
				reason = strings.TrimSpace(reason + "\n" + rest)
			}
			return Reject, reason, true
		}
		return "", "", false
	}
	return "", "", false
}

// restAfterFirstLine is what follows the first non-blank line of body.
func restAfterFirstLine(body string) string {
	body = strings.TrimLeft(body, " \t\r\n")
	_, rest, _ := strings.Cut(body, "\n")
	return strings.TrimSpace(rest)
}

// decisions returns the allowed humans' decisions among comments and
// reviews, oldest first. Bot comments, comments of anyone else, dismissed
// reviews and plain review comments decide nothing.
func decisions(comments []forge.Comment, reviews []forge.Review, who people) []Decision {
	var out []Decision
	for _, c := range comments {
		if !who.human(c.Author) {
			continue
		}
		if v, reason, ok := parseDecision(c.Body); ok {
			out = append(out, Decision{ID: fmt.Sprintf("comment-%d", c.ID), Verdict: v, Reason: reason, Author: c.Author, At: c.Created})
		}
	}
	for _, r := range reviews {
		if !who.human(r.Author) || r.Dismissed {
			continue
		}
		d := Decision{ID: fmt.Sprintf("review-%d", r.ID), Reason: strings.TrimSpace(r.Body), Author: r.Author, At: r.Submitted}
		switch r.State {
		case forge.ReviewApprove:
			d.Verdict = Accept
		case forge.ReviewRequestChanges:
			d.Verdict = Reject
		default:
			continue
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}
