package dev

import (
	"slices"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
)

// TestLedgerRecordsStageTimes: a merged run's record says where its time
// went, milestone to milestone, with a CI loop counted in pr_to_ci.
func TestLedgerRecordsStageTimes(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		h.advanceClock(2 * time.Minute) // the model works
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.advanceClock(time.Minute)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "tests failed")
	h.tick() // red: the session fixes it, 2 more minutes
	h.advanceClock(3 * time.Minute)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.advanceClock(10 * time.Minute)
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "LGTM")
	h.tick()
	rec := h.wantLedger(ledger.ReasonMerged, "")
	want := []ledger.StageTime{
		{Name: StageClaimToSession, Wall: 0},
		{Name: StageSessionToPR, Wall: 2 * time.Minute},
		{Name: StagePRToCI, Wall: 6 * time.Minute},
		{Name: StageCIToApproval, Wall: 10 * time.Minute},
		{Name: StageApprovalToMerge, Wall: 0},
	}
	if !slices.Equal(rec.Stages, want) {
		t.Fatalf("stages %+v, want %+v", rec.Stages, want)
	}
}
