package dev

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	verdictpkg "github.com/disinto/disinto/lib/verdict"
)

// Prior art is what earlier, abandoned attempts at an issue left: closed,
// unmerged pull requests, shown in the first prompt so a fresh attempt
// reuses what was right in them (spec 10 §3.3 step 10.4). It is read only
// when a first prompt is rendered, never by an idle tick.

// Bounds of the prior-art block: pull requests shown, diff lines (as the
// reference kept) and bytes per pull request, review text per pull
// request, and the whole block.
const (
	priorArtPulls       = 3
	priorArtDiffLines   = 500
	priorArtDiffBytes   = 24 << 10
	priorArtReviewBytes = 4 << 10
	priorArtTotalBytes  = 64 << 10
)

// priorArtTitle heads the block; the dev formula's implement step refers
// to it as "prior art".
const priorArtTitle = "Prior art: closed, unmerged pull requests of this issue"

// refersTo reports whether a pull request body says it fixes issue n, the
// way the reference found prior art by others (`Fixes #N`). A title that
// merely contains #N is no reference (#1 is in "(#12)").
func refersTo(body string, n int64) bool {
	re := regexp.MustCompile(`(?i)\b(fix(es|ed)?|close[sd]?|resolve[sd]?) #` + strconv.FormatInt(n, 10) + `\b`)
	return re.MatchString(body)
}

// priorArtPullsOf picks the prior art of issue n from closed: unmerged
// pull requests that are the agent's own for n (by identity, on a branch
// of n or with its reference marker) or that say they fix n, newest first,
// at most priorArtPulls.
func priorArtPullsOf(closed []forge.PullRequest, me string, n int64) []forge.PullRequest {
	var out []forge.PullRequest
	for _, p := range closed {
		if p.Merged || p.State == forge.StateOpen {
			continue
		}
		if ownOfIssue(p, me, n) || refersTo(p.Body, n) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	if len(out) > priorArtPulls {
		out = out[:priorArtPulls]
	}
	return out
}

// priorArt returns the prior-art block of st's issue, ok false when there
// is none. The closed pull requests come from the branch choice of the
// same first session when it listed them.
func (a *Agent) priorArt(ctx context.Context, st *State) (blk formula.Block, ok bool, err error) {
	closed := st.closed
	if !st.closedListed {
		if closed, err = a.closedPulls(ctx); err != nil {
			return formula.Block{}, false, err
		}
		st.closed, st.closedListed = closed, true
	}
	me, err := a.identity(ctx)
	if err != nil {
		return formula.Block{}, false, err
	}
	pulls := priorArtPullsOf(closed, me, st.Issue)
	if len(pulls) == 0 {
		return formula.Block{}, false, nil
	}
	var b strings.Builder
	for i, p := range pulls {
		part, err := a.priorArtOf(ctx, p)
		if err != nil {
			return formula.Block{}, false, err
		}
		if i > 0 && b.Len()+len(part) > priorArtTotalBytes {
			fmt.Fprintf(&b, "(%d more closed pull requests left out for length.)\n", len(pulls)-i)
			break
		}
		b.WriteString(part)
	}
	return formula.Block{Title: priorArtTitle, Body: a.red.String(b.String()), Untrusted: true}, true, nil
}

// priorArtOf renders one closed pull request: title, branch, its last
// review and the head of its diff.
func (a *Agent) priorArtOf(ctx context.Context, p forge.PullRequest) (string, error) {
	diff, err := a.o.Forge.PullDiff(ctx, p.Number)
	if err != nil {
		return "", fmt.Errorf("prior art #%d: %w", p.Number, err)
	}
	review, err := a.lastReview(ctx, p)
	if err != nil {
		return "", fmt.Errorf("prior art #%d: %w", p.Number, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Pull request #%d: %s\n\nBranch %s, by @%s, closed without merging.\n\n", p.Number, oneLine(p.Title), oneLine(p.Head), p.Author)
	if review != "" {
		fmt.Fprintf(&b, "#### Its last review\n\n%s\n\n", headBytes(strings.TrimSpace(review), priorArtReviewBytes))
	} else {
		b.WriteString("#### Its last review\n\n(none)\n\n")
	}
	excerpt, cut := headLines(diff, priorArtDiffLines, priorArtDiffBytes)
	fmt.Fprintf(&b, "#### Its diff\n\n%s\n", strings.TrimRight(excerpt, "\n"))
	if cut {
		fmt.Fprintf(&b, "(diff cut after %d lines)\n", strings.Count(excerpt, "\n"))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// lastReview returns the text of p's newest review: the review bot's
// verdict on p's last head when there is one, else the newest formal
// review with a text by anyone but the agent.
func (a *Agent) lastReview(ctx context.Context, p forge.PullRequest) (string, error) {
	reviews, err := a.o.Forge.ListReviews(ctx, p.Number)
	if err != nil {
		return "", err
	}
	if a.o.ReviewBot != "" {
		comments, err := a.o.Forge.ListComments(ctx, p.Number)
		if err != nil {
			return "", err
		}
		if r, ok := verdictpkg.Read(comments, reviews, p.HeadSHA, a.o.ReviewBot); ok && strings.TrimSpace(r.Feedback) != "" {
			return fmt.Sprintf("%s: %s", r.Verdict, r.Feedback), nil
		}
	}
	me, _ := a.identity(ctx)
	for i := len(reviews) - 1; i >= 0; i-- {
		rv := reviews[i]
		if strings.TrimSpace(rv.Body) != "" && !strings.EqualFold(rv.Author, me) {
			return fmt.Sprintf("%s by @%s: %s", rv.State, rv.Author, rv.Body), nil
		}
	}
	return "", nil
}

// oneLine keeps the first line of s, for titles and branch names.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// headLines returns at most n lines and max bytes of the start of s, and
// whether anything was cut.
func headLines(s string, n, maxBytes int) (string, bool) {
	cut := false
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines, cut = lines[:n], true
	}
	out := strings.Join(lines, "")
	if len(out) > maxBytes {
		out, cut = headBytes(out, maxBytes), true
	}
	return out, cut
}

// headBytes returns at most n bytes of the start of s, cut at a line end
// where there is one, never inside a UTF-8 sequence.
func headBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = strings.ToValidUTF8(s[:n], "")
	if i := strings.LastIndexByte(s, '\n'); i > n/2 {
		s = s[:i+1]
	}
	return s + "…"
}
