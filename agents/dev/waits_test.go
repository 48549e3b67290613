package dev

import (
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/text"
)

// greenAndApprove passes CI on the pull request's head, approves it and
// ticks after each.
func greenAndApprove(h *harness, pr int64) {
	h.t.Helper()
	h.f.setStatus(h.f.pull(pr).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(pr, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
}

func TestWaitTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs once the pull request is open; it returns the wait
		// limit that should end the run.
		before func(h *harness, pr int64) time.Duration
		code   ledger.Code
	}{
		{"no CI result", func(h *harness, _ int64) time.Duration {
			return h.a.lim.CITimeout
		}, ledger.CodeCITimeout},
		{"CI pending forever", func(h *harness, pr int64) time.Duration {
			h.f.setStatus(h.f.pull(pr).HeadSHA, forge.CIPending, "queued")
			return h.a.lim.CITimeout
		}, ledger.CodeCITimeout},
		{"CI time does not count for review", func(h *harness, pr int64) time.Duration {
			h.advanceClock(h.a.lim.CITimeout - time.Minute)
			h.f.setStatus(h.f.pull(pr).HeadSHA, forge.CISuccess, "ok")
			h.tick()
			h.wantStage(1, StageAwaitingReview)
			return h.a.lim.ReviewTimeout
		}, ledger.Code("review.timeout")},
		{"changes requested then silence", func(h *harness, pr int64) time.Duration {
			h.f.setStatus(h.f.pull(pr).HeadSHA, forge.CISuccess, "ok")
			h.tick()
			h.f.review(pr, "review-bot", forge.ReviewRequestChanges, "rename it")
			h.advanceClock(h.a.lim.ReviewTimeout - time.Minute)
			h.tick() // the fix is pushed: a new head waits for CI afresh
			h.wantStage(1, StageAwaitingCI)
			h.f.setStatus(h.f.pull(pr).HeadSHA, forge.CISuccess, "ok")
			h.tick()
			return h.a.lim.ReviewTimeout
		}, ledger.Code("review.timeout")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, pushing)
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			limit := tc.before(h, st.PR)
			stage := StageAwaitingCI
			if tc.code != ledger.CodeCITimeout {
				stage = StageAwaitingReview
			}
			h.wantStage(n, stage)
			h.advanceClock(limit - time.Second)
			h.tick()
			h.wantStage(n, stage)
			h.advanceClock(time.Second)
			h.tick()
			h.wantStage(n, StageEscalated)
			h.wantLedger(ledger.ReasonEscalated, tc.code)
			h.wantComment(n, "`"+string(tc.code)+"`")
			h.wantComment(n, "@alice")
			h.wantLabels(n, forge.LabelBlocked)
			if h.f.pull(st.PR).State != forge.StateOpen {
				t.Fatal("the pull request was closed; a human should find it open")
			}
		})
	}
}

func TestWaitWithoutStartStartsNow(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	st.WaitingSince = time.Time{} // a state written before waits were timed
	if err := h.a.st.save(st); err != nil {
		t.Fatal(err)
	}
	h.advanceClock(10 * h.a.lim.CITimeout)
	h.tick()
	if got := h.wantStage(n, StageAwaitingCI); !got.WaitingSince.Equal(h.clock()) {
		t.Fatalf("wait started at %v, want now %v", got.WaitingSince, h.clock())
	}
}

func TestRebaseBeforeMerge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse func(h *harness) // makes the next merge attempt need a rebase
		prompt string
		code   ledger.Code
	}{
		{"behind primary", func(h *harness) { h.g.setBehind(true) }, "fallen behind main", codeMergeBehind},
		{"merge conflict", func(h *harness) { h.f.fake.FailNext("Merge", forge.ErrConflict) }, "conflicts with main", ledger.CodeMergeConflict},
	} {
		t.Run(tc.name+" then merged", func(t *testing.T) {
			h := newHarness(t, pushing)
			h.g.setRebaseConflict(true) // the agent's own rebase fails
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			approved := h.f.pull(st.PR).HeadSHA
			tc.refuse(h)
			greenAndApprove(h, st.PR)
			calls := h.r.Calls()
			if len(calls) != 2 || calls[1].ResumeID != "sess-1" || !strings.Contains(calls[1].Prompt, tc.prompt) ||
				!strings.Contains(calls[1].Prompt, "rebase 1/3") || !strings.Contains(calls[1].Prompt, "origin/main") {
				t.Fatalf("rebase session: %d calls, last %+v", len(calls), calls[len(calls)-1])
			}
			if p := h.f.pull(st.PR); p.Merged || p.HeadSHA == approved {
				t.Fatalf("after the rebase request: merged %v, head %s (approved %s)", p.Merged, p.HeadSHA, approved)
			}
			h.wantStage(n, StageAwaitingCI)
			h.g.setBehind(false)
			greenAndApprove(h, st.PR)
			h.wantLedger(ledger.ReasonMerged, "")
		})
		t.Run(tc.name+" every time", func(t *testing.T) {
			h := newHarness(t, pushing)
			h.g.setRebaseConflict(true)
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			for i := 0; i <= h.a.lim.Rebases; i++ {
				tc.refuse(h)
				greenAndApprove(h, st.PR)
			}
			h.wantStage(n, StageBlocked)
			h.wantLedger(ledger.ReasonBlocked, tc.code)
			h.wantComment(n, "after 3 rebases")
			if got := len(h.r.Calls()); got != 1+h.a.lim.Rebases {
				t.Fatalf("%d sessions, want the first and %d rebases", got, h.a.lim.Rebases)
			}
			if h.f.pull(st.PR).Merged {
				t.Fatal("merged")
			}
		})
	}
}

func TestMergeBlockedByForge(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	for i := 0; i < h.a.lim.MergeAttempts; i++ {
		h.f.fake.FailNext("Merge", forge.ErrMergeBlocked)
	}
	greenAndApprove(h, st.PR) // attempt 1
	for i := 1; i < h.a.lim.MergeAttempts; i++ {
		h.wantStage(n, StageAwaitingReview)
		h.tick()
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, ledger.Code("merge.blocked"))
	if got := len(h.r.Calls()); got != 1 {
		t.Fatalf("%d sessions: a protection refusal (the pull request is mergeable) is no reason to rebase", got)
	}
}

// A forge still checking mergeability through every retry refuses
// nothing: the merge waits for the next tick without spending an
// attempt, and only a check pending for longer than mergePendingLimit
// counts as a refusal.
func TestMergePendingCostsNoAttempt(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	for i := 0; i < 2*h.a.lim.MergeAttempts; i++ {
		h.f.fake.FailNext("Merge", forge.ErrMergePending)
	}
	greenAndApprove(h, st.PR)
	for i := 1; i < 2*h.a.lim.MergeAttempts; i++ {
		if cur := h.wantStage(n, StageAwaitingReview); cur.MergeAttempts != 0 {
			t.Fatalf("a pending check spent %d merge attempts", cur.MergeAttempts)
		}
		h.tick()
	}
	h.tick() // the forge is done checking
	h.wantLedger(ledger.ReasonMerged, "")

	h2 := newHarness(t, pushing)
	n = h2.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st = driveToPR(t, h2, n)
	for i := 0; i < 10; i++ {
		h2.f.fake.FailNext("Merge", forge.ErrMergePending)
	}
	greenAndApprove(h2, st.PR)
	h2.advanceClock(mergePendingLimit)
	for i := 0; i < h2.a.lim.MergeAttempts; i++ {
		h2.tick()
	}
	h2.wantStage(n, StageBlocked)
	h2.wantLedger(ledger.ReasonBlocked, ledger.Code("merge.blocked"))
}

// A merge the forge pushed but would not record ends the issue as merged:
// the change is on the primary branch; the pull request is closed with a
// note naming the commit, once.
func TestMergeLandedUnrecordedEndsMerged(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	landed := "4f1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c"
	h.f.fake.FailNext("Merge", &forge.LandedError{PR: st.PR, SHA: landed, Err: forge.ErrMergeBlocked})
	greenAndApprove(h, st.PR)
	rec := h.wantLedger(ledger.ReasonMerged, "")
	if rec.PR != st.PR {
		t.Fatalf("merged record of pull request #%d, want #%d", rec.PR, st.PR)
	}
	if p := h.f.pull(st.PR); p.State != forge.StateClosed || p.Merged {
		t.Fatalf("pull request after an unrecorded merge: %+v, want closed", p)
	}
	h.wantComment(st.PR, text.ShortSHA(landed))
	if i := h.f.issue(n); i.State != forge.StateClosed {
		t.Fatalf("issue after an unrecorded merge: %+v, want closed", i)
	}
}
