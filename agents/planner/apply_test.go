package planner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
	"github.com/disinto/disinto/lib/formulaagent"
)

// fakeAgent is a planner acting as planner-bot on an in-memory forge, for
// the apply steps' unit tests (the scenarios run them on the real one).
func fakeAgent(t *testing.T) (*Agent, *forgefake.Repo, *forgefake.Repo) {
	t.Helper()
	f := forgefake.New(func() time.Time { return time.Date(2026, 4, 15, 8, 0, 0, 0, time.UTC) })
	owner := f.Repo("acme", "proj", "owner")
	bot := f.Repo("acme", "proj", "planner-bot")
	if _, err := owner.EnsureLabels(context.Background()); err != nil {
		t.Fatal(err)
	}
	runner := formulaagent.NewRunner(formulaagent.Options{Role: role, Project: "proj", Forge: bot, StateDir: t.TempDir()})
	return New(Options{Project: "proj", Forge: bot, Driver: runner}), owner, bot
}

// TestPrioritiseGuard: a priority list none of whose issues is open moves
// nothing; a list of open ones moves the label and keeps every other.
func TestPrioritiseGuard(t *testing.T) {
	a, owner, _ := fakeAgent(t)
	ctx := context.Background()
	had, _ := owner.CreateIssue(ctx, forge.NewIssue{Title: "had", Labels: []forge.LabelName{forge.LabelPriority, forge.LabelInProgress}})
	next, _ := owner.CreateIssue(ctx, forge.NewIssue{Title: "next", Labels: []forge.LabelName{forge.LabelBacklog}})
	open, _ := owner.ListIssues(ctx, forge.IssueQuery{})
	ap := newApplied()
	if err := a.prioritise(ctx, []IssueRef{{Ref: "unfiled"}}, Decisions{}, open, ap); err != nil {
		t.Fatal(err)
	}
	if i, _ := owner.GetIssue(ctx, had.Number); !i.HasLabel(forge.LabelPriority) || len(ap.Lines) != 1 {
		t.Fatalf("an empty resolution moved priority: %v %v", i.Labels, ap.Lines)
	}
	if err := a.prioritise(ctx, []IssueRef{{Issue: next.Number}}, Decisions{}, open, ap); err != nil {
		t.Fatal(err)
	}
	h, _ := owner.GetIssue(ctx, had.Number)
	n, _ := owner.GetIssue(ctx, next.Number)
	if h.HasLabel(forge.LabelPriority) || !h.HasLabel(forge.LabelInProgress) || !n.HasLabel(forge.LabelPriority) || !n.HasLabel(forge.LabelBacklog) {
		t.Errorf("had %v, next %v", h.Labels, n.Labels)
	}
}

// TestCloseExcess: issues of the planner's identity that appeared during
// the run beyond the budget are closed newest first, with a comment;
// those open before the run and others' issues are left alone.
func TestCloseExcess(t *testing.T) {
	a, owner, bot := fakeAgent(t)
	ctx := context.Background()
	before, _ := bot.CreateIssue(ctx, forge.NewIssue{Title: "open before the run"})
	human, _ := owner.CreateIssue(ctx, forge.NewIssue{Title: "a human's"})
	res := &result{applied: newApplied(), decisions: Decisions{Budget: 4}, openBefore: map[int64]bool{before.Number: true}}
	for range 3 {
		i, _ := bot.CreateIssue(ctx, forge.NewIssue{Title: "filed"})
		res.applied.Numbers = append(res.applied.Numbers, i.Number)
	}
	s1, _ := bot.CreateIssue(ctx, forge.NewIssue{Title: "stray 1"})
	s2, _ := bot.CreateIssue(ctx, forge.NewIssue{Title: "stray 2"})
	all, _ := owner.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err := a.closeExcess(ctx, all, "planner-bot", res); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.closed, []int64{s2.Number}) {
		t.Fatalf("closed %v, want only the newest stray #%d", res.closed, s2.Number)
	}
	for _, n := range []int64{before.Number, human.Number, s1.Number} {
		if i, _ := owner.GetIssue(ctx, n); i.State != forge.StateOpen {
			t.Errorf("#%d was closed", n)
		}
	}
	if cs, _ := owner.ListComments(ctx, s2.Number); len(cs) != 1 || !strings.Contains(cs[0].Body, "budget is 4") {
		t.Errorf("comments %+v", cs)
	}
}
