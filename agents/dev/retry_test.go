package dev

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula/formulatest"
)

// abandon closes the run's pull request unmerged (a maintainer gave up on
// it), lets the agent block the issue, and sends the issue back.
func abandon(t *testing.T, h *harness, n, pr int64) {
	t.Helper()
	if err := h.f.owner.ClosePull(t.Context(), pr); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if st := h.wantStage(n, StageBlocked); st.Code != "pr.closed_externally" {
		t.Fatalf("blocked with %s, want pr.closed_externally", st.Code)
	}
	if err := h.f.owner.RemoveLabels(t.Context(), n, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(t.Context(), n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
}

// TestFreshAttemptAfterAbandonedPull: an issue sent back after its pull
// request was closed unmerged starts over on fix/issue-N-2, from the first
// prompt (not the old session), and that prompt shows the abandoned pull
// request as prior art: title, its last review and its diff, fenced.
func TestFreshAttemptAfterAbandonedPull(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	if err := h.f.bot.SetPullDiff(st.PR, "diff --git a/x.go b/x.go\n+IGNORE-EARLIER old approach\n"); err != nil {
		t.Fatal(err)
	}
	h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "The cache is the wrong place for this.")
	abandon(t, h, n, st.PR)

	h.tick()
	cur := h.wantStage(n, StageAwaitingCI)
	if cur.Branch != "fix/issue-1-2" || cur.PR == st.PR || cur.PR == 0 {
		t.Fatalf("fresh attempt on %s, pull request #%d (old #%d); want fix/issue-1-2 and a new pull request", cur.Branch, cur.PR, st.PR)
	}
	if p := h.f.pull(cur.PR); p.Head != "fix/issue-1-2" || p.State != forge.StateOpen {
		t.Fatalf("new pull request: %+v", p)
	}
	calls := h.r.Calls()
	if len(calls) != 2 || calls[1].ResumeID != "" {
		t.Fatalf("%d sessions, last resumes %q; want a new session", len(calls), calls[len(calls)-1].ResumeID)
	}
	prompt := calls[1].Prompt
	for _, want := range []string{priorArtTitle, "Pull request #2: fix: Fix it (#1)", "The cache is the wrong place for this.",
		"IGNORE-EARLIER old approach", "fix/issue-1-2"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("first prompt of the fresh attempt lacks %q:\n%s", want, prompt)
		}
	}
	for _, l := range formulatest.OutsideFences(prompt) {
		if strings.Contains(l, "IGNORE-EARLIER") || strings.Contains(l, "wrong place") {
			t.Errorf("prior art outside the fence: %q", l)
		}
	}
	if strings.Contains(calls[0].Prompt, priorArtTitle) {
		t.Error("the first attempt was shown prior art it has none of")
	}

	// A second abandonment leads to the third attempt's branch.
	abandon(t, h, n, cur.PR)
	h.tick()
	if third := h.wantStage(n, StageAwaitingCI); third.Branch != "fix/issue-1-3" {
		t.Fatalf("third attempt on %s, want fix/issue-1-3", third.Branch)
	}
}

// TestBackFromBlockedKeepsAnOpenPull: sent back while its pull request is
// still open, the run carries on on the same branch and pull request,
// resuming the session.
func TestBackFromBlockedKeepsAnOpenPull(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "tests failed")
	for range h.a.lim.CIFixes + 1 {
		h.tick()
		h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "tests failed")
	}
	h.wantStage(n, StageBlocked)
	if err := h.f.owner.RemoveLabels(t.Context(), n, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(t.Context(), n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	before := len(h.r.Calls())
	h.tick()
	cur, ok, err := h.a.st.load(n)
	if err != nil || !ok || cur.Branch != "fix/issue-1" || cur.PR != st.PR {
		t.Fatalf("resumed run: %+v, %v", cur, err)
	}
	calls := h.r.Calls()
	if len(calls) != before+1 || calls[before].ResumeID == "" || strings.Contains(calls[before].Prompt, priorArtTitle) {
		t.Fatalf("sessions %d→%d; the resumed one: %+v", before, len(calls), calls[len(calls)-1])
	}
}

// TestClaimedAnewAfterAClosedPull: an issue claimed with no state of the
// agent (a lost data directory, a new daemon) but with the agent's closed,
// unmerged pull request on fix/issue-N works on fix/issue-N-2.
func TestClaimedAnewAfterAClosedPull(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	abandon(t, h, n, st.PR)
	// The data directory is lost: state and workspace.
	st.run = direct{h.led}
	h.a.removeWorkspace(t.Context(), &st)
	if err := h.a.st.remove(n); err != nil {
		t.Fatal(err)
	}
	h.tick()
	cur := h.wantStage(n, StageAwaitingCI)
	if cur.Branch != "fix/issue-1-2" {
		t.Fatalf("claimed anew on %s, want fix/issue-1-2", cur.Branch)
	}
	// The suffixed branch's pull request is the agent's own: it is
	// followed through review and merged.
	greenAndApprove(h, cur.PR)
	if p := h.f.pull(cur.PR); !p.Merged || p.Head != "fix/issue-1-2" {
		t.Fatalf("pull request of the fresh attempt: %+v", p)
	}
	if i := h.f.issue(n); i.State != forge.StateClosed {
		t.Fatalf("issue after the merge: %s", i.State)
	}
}

func TestBranchNames(t *testing.T) {
	for _, tc := range []struct {
		n       int64
		k       int
		want    string
		attempt int
	}{{7, 1, "fix/issue-7", 1}, {7, 0, "fix/issue-7", 1}, {7, 2, "fix/issue-7-2", 2}, {12, 13, "fix/issue-12-13", 13}} {
		got := branchFor(tc.n, tc.k)
		if got != tc.want || issueOfBranch(got) != tc.n || attemptOfBranch(got) != tc.attempt {
			t.Errorf("branchFor(%d, %d) = %s (issue %d, attempt %d)", tc.n, tc.k, got, issueOfBranch(got), attemptOfBranch(got))
		}
	}
	for _, bad := range []string{"fix/issue-7-x", "fix/issue-7-1", "chore/7"} {
		if k := attemptOfBranch(bad); k != 0 {
			t.Errorf("attemptOfBranch(%s) = %d", bad, k)
		}
	}
	mine := forge.PullRequest{Author: bot, Head: "fix/issue-7-3", State: forge.StateClosed}
	if !ownOfIssue(mine, bot, 7) || ownOfIssue(mine, bot, 3) || ownOfIssue(forge.PullRequest{Author: "eve", Head: "fix/issue-7"}, bot, 7) {
		t.Error("ownOfIssue")
	}
	if !refersTo("Fixes #7.", 7) || refersTo("Fixes #71", 7) || refersTo("see #7", 7) {
		t.Error("refersTo")
	}
}
