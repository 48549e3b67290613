package dev

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// issueQueries records the issue listings the agent asks for.
type issueQueries struct {
	forgeAPI
	qs []forge.IssueQuery
}

func (q *issueQueries) ListIssues(ctx context.Context, iq forge.IssueQuery) ([]forge.Issue, error) {
	q.qs = append(q.qs, iq)
	return q.forgeAPI.ListIssues(ctx, iq)
}

func numbers(is []forge.Issue) []int64 {
	var out []int64
	for _, i := range is {
		out = append(out, i.Number)
	}
	return out
}

// TestOpenIssuesAsksForChangesOnly: after one full listing, the agent
// asks only for issues updated since the newest update it saw; an issue
// opened, changed or closed since is followed, and the whole list is read
// again every fullListEvery.
func TestOpenIssuesAsksForChangesOnly(t *testing.T) {
	rec := &issueQueries{}
	h := newHarness(t, nil, func(o *Options) { rec.forgeAPI, o.Forge = o.Forge, rec })
	ctx := t.Context()
	a := h.f.addIssue("first", "x")
	got, err := h.a.openIssues(ctx)
	if err != nil || !slices.Equal(numbers(got), []int64{a}) {
		t.Fatalf("first listing %v, %v", numbers(got), err)
	}
	h.advanceClock(time.Minute)
	b := h.f.addIssue("second", "x")
	h.f.close(a)
	got, err = h.a.openIssues(ctx)
	if err != nil || !slices.Equal(numbers(got), []int64{b}) {
		t.Fatalf("after a close and an open: %v, %v", numbers(got), err)
	}
	if last := rec.qs[len(rec.qs)-1]; last.State != forge.StateAll || last.Since.IsZero() {
		t.Fatalf("second listing asked %+v, want the changes since the first", last)
	}
	if err := h.f.owner.AddLabels(ctx, b, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.a.openIssues(ctx); len(got) != 1 || !got[0].HasLabel(forge.LabelBacklog) {
		t.Fatalf("a label added since is not seen: %+v", got)
	}
	h.advanceClock(fullListEvery)
	if _, err := h.a.openIssues(ctx); err != nil {
		t.Fatal(err)
	}
	if last := rec.qs[len(rec.qs)-1]; last.State != forge.StateOpen || !last.Since.IsZero() {
		t.Fatalf("after %s the listing asked %+v, want the whole open list", fullListEvery, last)
	}
}
