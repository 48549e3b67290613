package dev

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
)

// relabel moves issue n from blocked back to the backlog, as a maintainer
// does to resume it.
func relabel(h *harness, n int64) {
	h.t.Helper()
	if err := h.f.owner.RemoveLabels(h.t.Context(), n, forge.LabelBlocked); err != nil {
		h.t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(h.t.Context(), n, forge.LabelBacklog); err != nil {
		h.t.Fatal(err)
	}
}

// The documented way back from blocked (remove blocked, add backlog) resumes
// the issue on its open pull request; the pull request of the issue being
// resumed must not hold the issue itself back.
func TestBlockedIssueResumesFromBacklog(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.advanceClock(h.a.lim.CITimeout)
	h.tick()
	h.wantStage(n, StageEscalated)
	sessions := len(h.r.Calls())

	relabel(h, n)
	h.tick()
	if got := len(h.r.Calls()); got != sessions+1 {
		t.Fatalf("%d sessions after the way back, want %d", got, sessions+1)
	}
	h.wantStage(n, StageAwaitingCI)
	h.wantLabels(n, forge.LabelInProgress)
	if ps := h.f.pulls(); len(ps) != 1 || ps[0].Number != st.PR {
		t.Fatalf("pull requests %+v, want only #%d", ps, st.PR)
	}
}

// A daemon killed between relabelling a resumed issue in-progress and
// saving its state leaves an own in-progress issue with a terminal state:
// the next tick must resume it, not leave it in-progress forever.
func TestResumeInterruptedBeforeStateSave(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	driveToPR(t, h, n)
	h.advanceClock(h.a.lim.CITimeout)
	h.tick()
	h.wantStage(n, StageEscalated)
	sessions := len(h.r.Calls())

	relabel(h, n)
	h.f.fake.FailNext("RemoveLabels", forge.ErrUnavailable)
	if err := h.tickErr(); err == nil {
		t.Fatal("the failed relabel was not reported")
	}
	h.wantLabels(n, forge.LabelInProgress, forge.LabelBacklog)
	h.a = h.newAgent()
	h.tick()
	if got := len(h.r.Calls()); got != sessions+1 {
		t.Fatalf("%d sessions, want %d", got, sessions+1)
	}
	h.wantStage(n, StageAwaitingCI)
	h.wantLabels(n, forge.LabelInProgress)
	if ps := h.f.pulls(); len(ps) != 1 {
		t.Fatalf("%d pull requests, want 1", len(ps))
	}
}

// A daemon killed after a merge cleared the assignee but before it closed
// the issue leaves an unassigned in-progress issue without an open pull
// request. The issue's own state finishes the merge; the stale repair must
// not also block the issue it just closed.
func TestMergeInterruptedBeforeCloseConverges(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.f.fake.FailNext("EditIssue", forge.ErrUnavailable)
	if err := h.tickErr(); err == nil {
		t.Fatal("the failed close was not reported")
	}
	if !h.f.pull(st.PR).Merged || len(h.f.issue(n).Assignees) != 0 {
		t.Fatal("setup: want a merged pull request and an unassigned issue")
	}
	h.a = h.newAgent()
	h.advanceClock(2 * h.a.lim.ClaimGrace)
	h.tick()
	i := h.f.issue(n)
	if i.State != forge.StateClosed || len(i.Labels) != 0 {
		t.Fatalf("issue after the restart: state %s labels %v", i.State, i.Labels)
	}
	for _, c := range h.f.commentsOf(n) {
		if strings.Contains(c.Body, "Stale in-progress") {
			t.Fatal("the merged issue was reported stale")
		}
	}
	recs := h.led.Records()
	if last := recs[len(recs)-1]; last.Reason != ledger.ReasonMerged || last.Issue != n {
		t.Fatalf("last ledger record %+v, want the merge of #%d", last, n)
	}
}

// An issue closed by someone else while its pull request waits ends the
// run without leaving in-progress on the closed issue.
func TestClosedExternallyDropsInProgress(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	driveToPR(t, h, n)
	h.f.close(n)
	h.tick()
	if _, ok := h.state(n); ok {
		t.Fatal("state kept after the issue was closed")
	}
	if i := h.f.issue(n); i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("closed issue keeps %v", i.Labels)
	}
	h.wantLedger(ledger.ReasonDone, ledger.Code("issue.closed_externally"))
}

// A session that cannot even start (its worktree cannot be made) is
// retried a bounded number of times, then the issue is blocked instead of
// staying in-progress forever.
func TestSessionStartFailuresAreBounded(t *testing.T) {
	h := newHarness(t, pushing)
	h.g.worktreeErr = errors.New("fatal: 'fix/issue-1' is already checked out")
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	for i := 0; i < 2*maxAfterFailures; i++ {
		h.tick()
		if st, _ := h.state(n); st.Stage.Terminal() {
			break
		}
	}
	h.wantStage(n, StageBlocked)
	h.wantLabels(n, forge.LabelBlocked)
	h.wantComment(n, "already checked out")
	if len(h.r.Calls()) != 0 {
		t.Fatalf("%d sessions ran without a worktree", len(h.r.Calls()))
	}
}

// The escalation comment asks a maintainer to answer in a comment and send
// the issue back: the resumed session must be given that answer.
func TestResumedSessionGetsTheAnswer(t *testing.T) {
	h := newHarness(t, func(h *harness, n int, inv claude.Invocation) (claude.Result, error) {
		if n == 0 {
			return h.writePhase(inv, phase.Escalate, "which API version?")
		}
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	if _, err := h.f.fake.Repo("owner", "proj", "carol").CreateComment(t.Context(), n, "An early remark."); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.wantStage(n, StageEscalated)
	if _, err := h.f.fake.Repo("owner", "proj", "alice").CreateComment(t.Context(), n, "Use API v2."); err != nil {
		t.Fatal(err)
	}
	relabel(h, n)
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d sessions, want 2", len(calls))
	}
	if calls[1].ResumeID != "sess-1" || !strings.Contains(calls[1].Prompt, "Use API v2.") || strings.Contains(calls[1].Prompt, "An early remark.") {
		t.Fatalf("resumed session: resume %q prompt:\n%s", calls[1].ResumeID, calls[1].Prompt)
	}
	h.wantStage(n, StageAwaitingCI)
}

// A backlog issue that depends on an open pull request waits without
// costing a request per tick: open pull requests are in the tick's listing.
func TestIdleTickWithPullDependency(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.f.owner.CreateBranch(t.Context(), "feature", ""); err != nil {
		t.Fatal(err)
	}
	pr, err := h.f.owner.CreatePull(t.Context(), forge.NewPull{Title: "feature", Head: "feature", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h.f.addIssue("waits", fmt.Sprintf("Depends on #%d", pr.Number), forge.LabelBacklog)
	h.tick()
	before := h.f.fake.Calls()
	h.tick()
	if calls, got := h.f.callsSince(before); got != 2 {
		t.Fatalf("idle tick made %d forge calls, want 2: %v", got, calls)
	}
	if len(h.r.Calls()) != 0 {
		t.Fatal("worked an issue whose dependency is open")
	}
}

// A step of one issue that keeps failing (here a state file whose stage no
// release knows) is retried a bounded number of ticks, then the issue is
// blocked with the error, and later ticks no longer fail.
func TestAdvanceFailuresAreBounded(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	st.Stage = "from-a-future-release"
	if err := h.a.st.save(st); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < maxAfterFailures; i++ {
		if err := h.tickErr(); err == nil || !strings.Contains(err.Error(), "unknown stage") {
			t.Fatalf("tick %d: err = %v, want the step's error", i+1, err)
		}
	}
	if err := h.tickErr(); err != nil {
		t.Fatalf("the tick that blocks the issue failed: %v", err)
	}
	recs := h.led.Records()
	if last := recs[len(recs)-1]; last.Reason != ledger.ReasonBlocked || last.Code != "engine.advance_failed" || last.Issue != n {
		t.Fatalf("last ledger record %+v, want blocked engine.advance_failed", last)
	}
	if len(recs) != maxAfterFailures+1 {
		t.Fatalf("%d ledger records, want one per failed tick and the block", len(recs))
	}
	h.wantLabels(n, forge.LabelBlocked)
	h.wantComment(n, "unknown stage")
	if err := h.tickErr(); err != nil {
		t.Fatalf("a blocked issue still fails ticks: %v", err)
	}
}

// A pull request that changes no code (docs only) and gets no CI status
// at all goes to review instead of waiting out the CI timeout; one that
// changes code keeps waiting. The diff is read once per head.
func TestNonCodeNeedsNoCI(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		stage      Stage
	}{
		{"docs only", "docs/guide.md", StageAwaitingReview},
		{"code", "main.go", StageAwaitingCI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, pushing)
			n := h.f.addIssue("Document it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			diff := fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-a\n+b\n", tc.file, tc.file, tc.file, tc.file)
			if err := h.f.owner.SetPullDiff(st.PR, diff); err != nil {
				t.Fatal(err)
			}
			h.tick()
			h.tick()
			h.wantStage(n, tc.stage)
			if diffs := h.f.fake.Calls()["PullDiff"]; diffs != 1 {
				t.Errorf("diff read %d times over two ticks, want once per head", diffs)
			}
		})
	}
}
