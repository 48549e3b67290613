package dev

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/text"
)

// firstOnly commits in the first session only; every later turn ends
// saying it is done without committing anything.
func firstOnly(h *harness, n int, inv claude.Invocation) (claude.Result, error) {
	if n == 0 {
		return h.implement(inv, phase.AwaitingCI)
	}
	return h.writePhase(inv, phase.AwaitingCI, "")
}

// A fix turn after a change request that commits nothing is asked once
// more, explicitly; the second empty turn blocks the issue at once
// instead of waiting out the review timeout (spec W-PR-2).
func TestFixTurnWithoutCommitBlocks(t *testing.T) {
	h := newHarness(t, firstOnly)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(head, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "Please rename foo to bar.")
	h.tick()

	calls := h.r.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d sessions, want 3 (first, fix, the one more ask)", len(calls))
	}
	if ask := calls[2]; ask.ResumeID != "sess-1" || !strings.Contains(ask.Prompt, "without a new commit") ||
		!strings.Contains(ask.Prompt, text.ShortSHA(head)) {
		t.Fatalf("second ask: resume %q prompt %q", ask.ResumeID, ask.Prompt)
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, ledger.CodeBuilderNoProgress)
	h.wantComment(n, "builder.no_progress")
	h.wantComment(n, "@alice")
	h.wantLabels(n, forge.LabelBlocked)
	if got := h.f.pull(st.PR).HeadSHA; got != head {
		t.Fatalf("head moved to %s", got)
	}
}

// After a CI failure, a fix turn that commits nothing is asked once more;
// when that turn commits, the new head goes to CI as usual and the count
// starts over.
func TestFixTurnWithoutCommitThenCommit(t *testing.T) {
	h := newHarness(t, func(h *harness, n int, inv claude.Invocation) (claude.Result, error) {
		if n == 1 {
			return h.writePhase(inv, phase.AwaitingCI, "")
		}
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(head, forge.CIFailure, "unit tests failed: TestWidget")
	h.tick()

	if got := len(h.r.Calls()); got != 3 {
		t.Fatalf("%d sessions, want 3", got)
	}
	cur := h.wantStage(n, StageAwaitingCI)
	if cur.HeadSHA == head || h.f.pull(st.PR).HeadSHA != cur.HeadSHA {
		t.Fatalf("head %s (pull request at %s), want a new one past %s", cur.HeadSHA, h.f.pull(st.PR).HeadSHA, head)
	}
	if cur.NoProgress != 0 || cur.CIFixes != 1 {
		t.Fatalf("no-progress %d, CI fixes %d; want 0 and 1", cur.NoProgress, cur.CIFixes)
	}
}

// Report lists the issue in flight with its stage, pull request and
// attempts, and forgets it once merged.
func TestReportListsWorkInFlight(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "unit tests failed")
	h.tick()
	rep := h.a.Report()
	if len(rep.Items) != 1 {
		t.Fatalf("report %+v, want one issue", rep)
	}
	it := rep.Items[0]
	if it.Issue != n || it.PR != st.PR || it.Stage != string(StageAwaitingCI) || it.Attempts["ci"] != 1 || it.Limits["ci"] != 3 ||
		it.Waiting.IsZero() || it.Project != "proj" || it.Role != "dev" {
		t.Fatalf("report item %+v", it)
	}
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	if rep := h.a.Report(); len(rep.Items) != 0 || len(rep.Pending) != 0 {
		t.Fatalf("report after the merge: %+v", rep)
	}
}
