package dev

import (
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
)

func TestOurs(t *testing.T) {
	const branch = "fix/issue-1"
	own := forge.PullRequest{Author: bot, Head: branch, State: forge.StateOpen}
	for _, tc := range []struct {
		name string
		mod  func(*forge.PullRequest)
		want bool
	}{
		{"own", func(*forge.PullRequest) {}, true},
		{"login case differs", func(p *forge.PullRequest) { p.Author = "Dev-Bot" }, true},
		{"another author", func(p *forge.PullRequest) { p.Author = "mallory" }, false},
		{"from a fork", func(p *forge.PullRequest) { p.FromFork = true }, false},
		{"another branch", func(p *forge.PullRequest) { p.Head = "fix/issue-2" }, false},
		{"merged, branch gone", func(p *forge.PullRequest) { p.State, p.Head = forge.StateClosed, "refs/pull/3/head" }, true},
		{"closed fork", func(p *forge.PullRequest) { p.State, p.FromFork = forge.StateClosed, true }, false},
	} {
		p := own
		tc.mod(&p)
		if got := ours(p, bot, branch); got != tc.want {
			t.Errorf("%s: ours = %v, want %v", tc.name, got, tc.want)
		}
	}
	if ours(forge.PullRequest{Head: branch, State: forge.StateOpen}, "", branch) {
		t.Error("an unknown identity owns an authorless pull request")
	}
}

// approveAll approves every open pull request as the review bot, as a
// review bot shown a plausible change might.
func (h *harness) approveAll() {
	h.t.Helper()
	for _, p := range h.f.pulls() {
		if p.State == forge.StateOpen {
			h.f.review(p.Number, "review-bot", forge.ReviewApprove, "ok")
		}
	}
}

// wantOnlyOwnMerged fails unless exactly one pull request is merged, the
// agent's own.
func (h *harness) wantOnlyOwnMerged() forge.PullRequest {
	h.t.Helper()
	var merged []forge.PullRequest
	for _, p := range h.f.pulls() {
		if p.Merged {
			merged = append(merged, p)
		}
	}
	if len(merged) != 1 || !ours(merged[0], bot, merged[0].Head) {
		h.t.Fatalf("merged %+v, want exactly the agent's own pull request", merged)
	}
	return merged[0]
}

// outsiderPulls is a model that, while it works, has mallory open a pull
// request on its branch: from mallory's fork, or from the agent's own
// branch once pushed.
func outsiderPulls(fromFork bool) model {
	return func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		branch := inv.Env[formula.EnvBranch]
		out := h.f.fake.Repo("owner", "proj", "mallory")
		head := branch
		if fromFork {
			fork, err := out.Fork(h.t.Context())
			if err != nil {
				return claude.Result{}, err
			}
			if _, err := h.f.fake.Repo(fork.Owner, fork.Name, "mallory").CreateBranch(h.t.Context(), branch, "main"); err != nil {
				return claude.Result{}, err
			}
			head = "mallory:" + branch
		}
		res, err := h.implement(inv, phase.AwaitingCI)
		if !fromFork {
			if perr := h.g.pushHead(inv.Dir, branch); perr != nil {
				return res, perr
			}
		}
		if _, perr := out.CreatePull(h.t.Context(), forge.NewPull{Title: "fix: mine", Head: head, Base: "main"}); perr != nil {
			return res, perr
		}
		return res, err
	}
}

func TestOthersPullOnTheBranchIsNeverTheAgents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fromFork bool
		state    forge.State // of mallory's pull request at the end
	}{
		{"from a fork", true, forge.StateOpen},
		{"from the agent's branch", false, forge.StateClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, outsiderPulls(tc.fromFork), func(o *Options) { o.CISystem = "none" })
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			if p := h.f.pull(st.PR); !ours(p, bot, st.Branch) {
				t.Fatalf("the agent took %+v as its pull request", p)
			}
			h.approveAll()
			h.tick()
			if own := h.wantOnlyOwnMerged(); own.Number != st.PR {
				t.Fatalf("merged #%d, want #%d", own.Number, st.PR)
			}
			h.wantLedger(ledger.ReasonMerged, "")
			for _, p := range h.f.pulls() {
				if p.Author != "mallory" {
					continue
				}
				if p.State != tc.state {
					t.Errorf("mallory's pull request #%d is %s, want %s", p.Number, p.State, tc.state)
				}
				if p.State == forge.StateClosed {
					h.wantComment(p.Number, "opened from `"+st.Branch+"`")
				}
			}
		})
	}
}

func TestOthersPullDoesNotHoldOrHideWork(t *testing.T) {
	h := newHarness(t, nil)
	stale := h.f.addIssue("stale", "x", forge.LabelInProgress)
	out := h.f.fake.Repo("owner", "proj", "mallory")
	if _, err := out.CreateBranch(t.Context(), branchFor(stale, 1), "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.CreatePull(t.Context(), forge.NewPull{Title: "hold", Head: branchFor(stale, 1), Base: "main"}); err != nil {
		t.Fatal(err)
	}
	h.advanceClock(2 * h.a.lim.ClaimGrace)
	h.tick()
	// Someone else's pull request on the branch is not the agent's work.
	h.wantLabels(stale, forge.LabelBlocked)
	h.wantComment(stale, "Stale in-progress issue detected")
}

func TestAdoptIgnoresOthersPull(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelInProgress)
	h.f.assign(n, bot)
	out := h.f.fake.Repo("owner", "proj", "mallory")
	if _, err := out.CreateBranch(t.Context(), branchFor(n, 1), "main"); err != nil {
		t.Fatal(err)
	}
	theirs, err := out.CreatePull(t.Context(), forge.NewPull{Title: "theirs", Head: branchFor(n, 1), Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h.tick() // a lost state directory: the agent adopts its in-progress issue
	st := h.wantStage(n, StageAwaitingCI)
	if st.PR == theirs.Number || !ours(h.f.pull(st.PR), bot, st.Branch) {
		t.Fatalf("adopted pull request #%d, mallory's is #%d", st.PR, theirs.Number)
	}
	if len(h.r.Calls()) != 1 {
		t.Fatalf("%d sessions, want 1", len(h.r.Calls()))
	}
}

func TestStateOnForeignPullBlocks(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	out := h.f.fake.Repo("owner", "proj", "mallory")
	if _, err := out.CreateBranch(t.Context(), "elsewhere", "main"); err != nil {
		t.Fatal(err)
	}
	theirs, err := out.CreatePull(t.Context(), forge.NewPull{Title: "theirs", Head: "elsewhere", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	st.PR = theirs.Number // a state written before ownership was checked
	if err := h.a.st.save(st); err != nil {
		t.Fatal(err)
	}
	h.f.review(theirs.Number, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	if h.f.pull(theirs.Number).Merged {
		t.Fatal("merged a pull request the agent did not open")
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, codeForeignPull)
}
