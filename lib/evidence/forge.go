package evidence

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// Forge is what the CI and review evidence read of the project's
// repository (*forge.RepoClient, as any bot that reads it).
type Forge interface {
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	PullCommits(ctx context.Context, n int64) ([]forge.Commit, error)
	CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
}

var _ Forge = (*forge.RepoClient)(nil)

// Limits of one collection, so that a busy project costs a bounded
// number of requests a day.
const (
	// maxPulls are the pull requests read, the most recently updated.
	maxPulls = 100
	// maxCommits are the commits read per pull request, its last ones.
	maxCommits = 20
	// maxListed bounds the pull requests a day's section names.
	maxListed = 10
)

// pullsSince are the pull requests updated at or after since, newest
// first, at most maxPulls.
func pullsSince(ctx context.Context, f Forge, since time.Time) ([]forge.PullRequest, error) {
	all, err := f.ListPulls(ctx, forge.StateAll)
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	var out []forge.PullRequest
	for _, p := range all {
		if !p.Updated.Before(since) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	if len(out) > maxPulls {
		out = out[:maxPulls]
	}
	return out, nil
}

// ciDay is one day's CI results.
type ciDay struct {
	green, red, pending int
	redPulls            []string
}

// CI collects the CI evidence of the pull requests updated since: each
// commit with a status, on the day of its last status, by its combined
// state.
func CI(ctx context.Context, f Forge, since time.Time) ([]Day, error) {
	pulls, err := pullsSince(ctx, f, since)
	if err != nil {
		return nil, err
	}
	days := map[string]*ciDay{}
	seen := map[string]bool{}
	for _, p := range pulls {
		commits, err := f.PullCommits(ctx, p.Number)
		if err != nil {
			return nil, fmt.Errorf("evidence: commits of #%d: %w", p.Number, err)
		}
		if len(commits) > maxCommits {
			commits = commits[len(commits)-maxCommits:]
		}
		for _, c := range commits {
			if seen[c.SHA] {
				continue
			}
			seen[c.SHA] = true
			cs, err := f.CombinedStatus(ctx, c.SHA)
			if err != nil {
				return nil, fmt.Errorf("evidence: status of %s: %w", text.ShortSHA(c.SHA), err)
			}
			var last time.Time
			for _, s := range cs.Statuses {
				if s.Updated.After(last) {
					last = s.Updated
				}
			}
			if cs.State == "" || last.IsZero() || last.Before(since) {
				continue
			}
			date := DateOf(last)
			d := days[date]
			if d == nil {
				d = &ciDay{}
				days[date] = d
			}
			switch cs.State {
			case forge.CISuccess:
				d.green++
			case forge.CIPending:
				d.pending++
			default: // failure, error, warning
				d.red++
				d.redPulls = append(d.redPulls, fmt.Sprintf("#%d at %s (%s)", p.Number, text.Abbrev(c.SHA, 7), failing(cs)))
			}
		}
	}
	out := make([]Day, 0, len(days))
	for date, d := range days {
		var b strings.Builder
		total := d.green + d.red + d.pending
		fmt.Fprintf(&b, "- commits checked: %d; green %d, red %d, pending %d", total, d.green, d.red, d.pending)
		if done := d.green + d.red; done > 0 {
			fmt.Fprintf(&b, " (%d%% green of those finished)", d.green*100/done)
		}
		b.WriteString("\n")
		listCapped(&b, d.redPulls, "red: ", " red")
		out = append(out, Day{Date: date, Body: b.String()})
	}
	return out, nil
}

// failing names the contexts of cs that did not pass.
func failing(cs forge.CombinedStatus) string {
	var out []string
	for _, s := range cs.Statuses {
		if s.State != forge.CISuccess && s.State != forge.CIPending {
			out = append(out, oneLine(s.Context)+": "+string(s.State))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return string(cs.State)
	}
	return text.Clip(strings.Join(out, ", "), 200)
}

// reviewDay is one day's reviews.
type reviewDay struct {
	approved, changes, comments int
	pulls                       []string
}

// Reviews collects the review evidence of the pull requests updated
// since: the formal reviews by reviewer ("" for anyone but the pull
// request's author), on the day each was submitted, with the round it
// was (its place among the reviewer's reviews of that pull request).
func Reviews(ctx context.Context, f Forge, reviewer string, since time.Time) ([]Day, error) {
	pulls, err := pullsSince(ctx, f, since)
	if err != nil {
		return nil, err
	}
	days := map[string]*reviewDay{}
	for _, p := range pulls {
		rs, err := f.ListReviews(ctx, p.Number)
		if err != nil {
			return nil, fmt.Errorf("evidence: reviews of #%d: %w", p.Number, err)
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Submitted.Before(rs[j].Submitted) })
		round := 0
		for _, r := range rs {
			if reviewer != "" && !strings.EqualFold(r.Author, reviewer) || reviewer == "" && strings.EqualFold(r.Author, p.Author) {
				continue
			}
			var what string
			switch r.State {
			case forge.ReviewApprove:
				what = "approved"
			case forge.ReviewRequestChanges:
				what = "changes requested"
			case forge.ReviewComment:
				what = "commented"
			default:
				continue // pending, or a review request
			}
			round++
			if r.Submitted.Before(since) {
				continue
			}
			date := DateOf(r.Submitted)
			d := days[date]
			if d == nil {
				d = &reviewDay{}
				days[date] = d
			}
			switch r.State {
			case forge.ReviewApprove:
				d.approved++
			case forge.ReviewRequestChanges:
				d.changes++
			default:
				d.comments++
			}
			line := fmt.Sprintf("#%d round %d: %s", p.Number, round, what)
			if p.Merged {
				line += " (merged since)"
			}
			d.pulls = append(d.pulls, line)
		}
	}
	out := make([]Day, 0, len(days))
	for date, d := range days {
		var b strings.Builder
		fmt.Fprintf(&b, "- reviews: %d; approved %d, changes requested %d, comments %d\n",
			d.approved+d.changes+d.comments, d.approved, d.changes, d.comments)
		sort.Strings(d.pulls)
		listCapped(&b, d.pulls, "", "")
		out = append(out, Day{Date: date, Body: b.String()})
	}
	return out, nil
}

// listCapped writes a line "- <prefix><item>" per item, at most
// maxListed of them, then how many more there were ("- … N more<more>").
func listCapped(b *strings.Builder, items []string, prefix, more string) {
	for i, it := range items {
		if i == maxListed {
			fmt.Fprintf(b, "- … %d more%s\n", len(items)-maxListed, more)
			return
		}
		fmt.Fprintf(b, "- %s%s\n", prefix, it)
	}
}

// oneLine keeps a forge-given name on one line of the file.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
