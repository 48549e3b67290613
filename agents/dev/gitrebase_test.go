package dev

import (
	"errors"
	"fmt"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// TestCleanRebaseNeedsNoSession: an approved branch that fell behind, or
// that the forge finds conflicting, is rebased by the agent itself when
// that is clean. No session runs; the new head was never approved, so it
// goes through CI and review again before it is merged.
func TestCleanRebaseNeedsNoSession(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse func(h *harness)
	}{
		{"behind primary", func(h *harness) { h.g.setBehind(true) }},
		{"merge conflict", func(h *harness) { h.f.fake.FailNext("Merge", forge.ErrConflict) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, pushing)
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			approved := h.f.pull(st.PR).HeadSHA
			tc.refuse(h)
			greenAndApprove(h, st.PR)
			if got := len(h.r.Calls()); got != 1 {
				t.Fatalf("%d sessions, want only the first: a clean rebase needs no model", got)
			}
			p := h.f.pull(st.PR)
			if p.Merged || p.HeadSHA == approved {
				t.Fatalf("after the rebase: merged %v, head %s (approved %s)", p.Merged, p.HeadSHA, approved)
			}
			cur := h.wantStage(n, StageAwaitingCI)
			if cur.HeadSHA != p.HeadSHA || cur.ReviewedSHA != "" || cur.Rebases != 1 {
				t.Fatalf("state after the rebase: head %s (pull %s), reviewed %q, rebases %d", cur.HeadSHA, p.HeadSHA, cur.ReviewedSHA, cur.Rebases)
			}
			// The old head's approval does not carry over: green CI on the
			// new head leads to a wait for review, not to a merge.
			h.f.setStatus(p.HeadSHA, forge.CISuccess, "ok")
			h.tick()
			h.wantStage(n, StageAwaitingReview)
			if h.f.pull(st.PR).Merged {
				t.Fatal("merged the rebased head on the old head's approval")
			}
			h.f.review(st.PR, "review-bot", forge.ReviewApprove, "still ok")
			h.tick()
			h.wantLedger(ledger.ReasonMerged, "")
			if got := len(h.r.Calls()); got != 1 {
				t.Fatalf("%d sessions by the merge", got)
			}
		})
	}
}

// TestCleanRebasesCountAgainstTheLimit: rebases the agent does itself count
// as rebases; a branch that keeps falling behind is blocked after the
// limit, without a session.
func TestCleanRebasesCountAgainstTheLimit(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	for i := 0; i <= h.a.lim.Rebases; i++ {
		h.g.setBehind(true)
		greenAndApprove(h, st.PR)
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, codeMergeBehind)
	h.wantComment(n, "after 3 rebases")
	if got := len(h.r.Calls()); got != 1 {
		t.Fatalf("%d sessions, want only the first", got)
	}
	if h.g.rebases != h.a.lim.Rebases {
		t.Fatalf("%d rebases by the agent, want %d", h.g.rebases, h.a.lim.Rebases)
	}
}

// TestFailedRebaseIsNotCounted: a rebase that fails for want of the forge
// (a push that did not go through) is retried next tick and does not use
// up the Rebases budget.
func TestFailedRebaseIsNotCounted(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.g.setBehind(true)
	h.g.mu.Lock()
	h.g.rebaseErr = fmt.Errorf("push fix/issue-1: %w", forge.ErrUnavailable)
	h.g.mu.Unlock()
	h.f.setStatus(st.HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	if err := h.tickErr(); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("tick = %v, want the push failure", err)
	}
	if cur := h.wantStage(n, StageAwaitingReview); cur.Rebases != 0 {
		t.Fatalf("a failed rebase was counted: %d", cur.Rebases)
	}
	h.tick()
	if cur := h.wantStage(n, StageAwaitingCI); cur.Rebases != 1 || cur.HeadSHA == st.HeadSHA {
		t.Fatalf("after the retry: rebases %d, head %s", cur.Rebases, cur.HeadSHA)
	}
	if got := len(h.r.Calls()); got != 1 {
		t.Fatalf("%d sessions", got)
	}
}
