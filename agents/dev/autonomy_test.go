package dev

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/vault"
)

// atLevel sets the autonomy level of the agent.
func atLevel(l config.AutonomyLevel) func(*Options) {
	return func(o *Options) { o.Autonomy.Level = l }
}

// say posts body on n as who.
func (h *harness) say(who string, n int64, body string) {
	h.t.Helper()
	if _, err := h.f.fake.Repo("owner", "proj", who).CreateComment(h.t.Context(), n, body); err != nil {
		h.t.Fatal(err)
	}
}

// greenAndApproved passes CI on st's head and has the review bot approve
// it, ticking once after each.
func (h *harness) greenAndApproved(n int64) State {
	h.t.Helper()
	st, _ := h.state(n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.wantStage(n, StageAwaitingReview)
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "LGTM")
	h.tick()
	st, _ = h.state(n)
	return st
}

// noteOn returns the agent's waiting note of kind on n, "" when none.
func (h *harness) noteOn(n int64, kind string) string {
	h.t.Helper()
	var found string
	for _, c := range h.f.commentsOf(n) {
		if c.Author == bot && strings.Contains(c.Body, "kind="+kind) && strings.Contains(c.Body, "disinto:dev-wait") {
			if found != "" {
				h.t.Fatalf("two %s notes on #%d", kind, n)
			}
			found = c.Body
		}
	}
	return found
}

func TestLevelAutoMergesAlone(t *testing.T) {
	h := newHarness(t, pushing, atLevel(config.AutonomyAuto))
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.greenAndApproved(n)
	if !h.f.pull(st.PR).Merged {
		t.Fatal("not merged at level auto")
	}
	if h.noteOn(st.PR, "merge") != "" {
		t.Fatal("a waiting note at level auto")
	}
}

func TestLevelApproveWaitsForAMaintainer(t *testing.T) {
	h := newHarness(t, pushing, atLevel(config.AutonomyApprove))
	collaborators(t, h, forge.PermWrite) // alice may write; the forge will not tell the bot: the configured maintainers do
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	st = h.greenAndApproved(n)
	h.wantStage(n, StageAwaitingApproval)
	head := h.f.pull(st.PR).HeadSHA
	note := h.noteOn(st.PR, "merge")
	if !strings.Contains(note, "/approve "+head) || !strings.Contains(note, "level is `approve`") || !strings.Contains(note, "@alice") {
		t.Fatalf("waiting note:\n%s", note)
	}
	if rep := h.a.Report(); len(rep.Items) != 1 || !strings.Contains(rep.Items[0].Human, "approval") {
		t.Fatalf("report: %+v", rep.Items)
	}
	// Approvals that do not count: an outsider's, a reader's, a bot's,
	// an abbreviated commit id, another commit.
	h.say("mallory", st.PR, "/approve "+head)
	h.say("reed", n, "/approve "+head)
	h.say("review-bot", st.PR, "/approve "+head)
	h.say("alice", st.PR, "/approve "+head[:12])
	h.say("alice", n, "/approve "+strings.Repeat("0", 40))
	h.say("alice", n, "> /approve "+head)
	h.f.review(st.PR, "mallory", forge.ReviewApprove, "ok")
	h.tick()
	h.tick()
	if h.f.pull(st.PR).Merged {
		t.Fatal("merged without a maintainer's approval")
	}
	if h.noteOn(st.PR, "merge") != note {
		t.Fatal("the note changed while nothing did")
	}
	h.f.review(st.PR, "alice", forge.ReviewApprove, "ok")
	h.tick()
	if !h.f.pull(st.PR).Merged {
		t.Fatal("not merged after a maintainer's formal approval")
	}
	h.wantLedger(ledger.ReasonMerged, "")
	if note := h.noteOn(st.PR, "merge"); !strings.Contains(note, "@alice approved this head") {
		t.Fatalf("note after the approval:\n%s", note)
	}
	// The mirror push of work merged at approve waits for a maintainer
	// too: a medium-tier action, approved in the vault.
	if got := h.v.filed(); len(got) != 1 || got[0].BlastRadius != vault.TierMedium {
		t.Fatalf("mirror push of work at level approve: %+v", got)
	}
}

func TestLevelApproveTakesAnApproveComment(t *testing.T) {
	h := newHarness(t, pushing, atLevel(config.AutonomyApprove))
	collaborators(t, h, forge.PermAdmin) // the forge tells the bot who may write
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.greenAndApproved(n)
	head := h.f.pull(st.PR).HeadSHA
	h.say("reed", n, "/approve "+head) // a reader
	h.tick()
	h.wantStage(n, StageAwaitingApproval)
	h.say("alice", n, "Looks right to me.\n\n/approve "+strings.ToUpper(head)+"\n")
	h.tick()
	if !h.f.pull(st.PR).Merged {
		t.Fatal("not merged after a maintainer's approve comment")
	}
}

func TestLevelAdvisoryNeverMerges(t *testing.T) {
	h := newHarness(t, pushing, atLevel(config.AutonomyAdvisory))
	collaborators(t, h, forge.PermWrite)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	st = h.greenAndApproved(n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.review(st.PR, "alice", forge.ReviewApprove, "ok")
	h.say("alice", n, "/approve "+head)
	h.tick()
	h.tick()
	if h.f.pull(st.PR).Merged {
		t.Fatal("merged at level advisory")
	}
	h.wantStage(n, StageAwaitingApproval)
	if note := h.noteOn(st.PR, "merge"); !strings.Contains(note, "level is `advisory`") || !strings.Contains(note, "merge it, or close it") {
		t.Fatalf("advisory note:\n%s", note)
	}
	// The maintainer merges it; the agent finishes the issue.
	if err := h.f.owner.Merge(t.Context(), st.PR, forge.MergeOptions{HeadSHA: head}); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if i := h.f.issue(n); i.State != forge.StateClosed {
		t.Fatalf("issue after the maintainer's merge: %+v", i)
	}
	h.wantLedger(ledger.ReasonMerged, "")
}

// workflow is a session that commits a change to the CI workflow (and a
// source file) on its first turn, and on later ones the files fixes
// lists for them (the workflow again after them).
func workflow(fixes ...[]string) model {
	return func(h *harness, n int, inv claude.Invocation) (claude.Result, error) {
		files := []string{".forgejo/workflows/ci.yml", "main.go"}
		if n > 0 && n-1 < len(fixes) {
			files = fixes[n-1]
		}
		h.g.commitFiles(inv.Dir, files...)
		return h.writePhase(inv, phase.AwaitingCI, "")
	}
}

func TestProtectedPathsAreHeldUntilApproved(t *testing.T) {
	h := newHarness(t, workflow([]string{"main.go"}, []string{".forgejo/workflows/ci.yml"}))
	collaborators(t, h, forge.PermWrite)
	n := h.f.addIssue("Fix CI", "body", forge.LabelBacklog)
	h.tick()
	st := h.wantStage(n, StageHeld)
	if len(h.g.pushed) != 0 || len(h.f.pulls()) != 0 {
		t.Fatalf("pushed %v, pull requests %d: the held change reached a branch", h.g.pushed, len(h.f.pulls()))
	}
	if h.g.heldOf(st.Branch) != st.HeldSHA {
		t.Fatalf("held ref at %q, want %s", h.g.heldOf(st.Branch), st.HeldSHA)
	}
	note := h.noteOn(n, "push")
	for _, want := range []string{"/approve " + st.HeldSHA, "`.forgejo/workflows/ci.yml`", "+new ", "| Other files changed | 1 |", "refs/disinto/held/fix/issue-1", "@alice"} {
		if !strings.Contains(note, want) {
			t.Errorf("hold note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "main.go b/main.go") {
		t.Errorf("hold note quotes the diff of an unprotected file:\n%s", note)
	}
	if rep := h.a.Report(); len(rep.Items) != 1 || !strings.Contains(rep.Items[0].Human, ".forgejo/workflows/ci.yml") {
		t.Fatalf("report: %+v", rep.Items)
	}
	// What does not release it.
	h.say("mallory", n, "/approve "+st.HeldSHA)
	h.say("alice", n, "/approve "+st.HeldSHA[:12])
	h.say(bot, n, "/approve "+st.HeldSHA)
	h.tick()
	h.tick()
	h.wantStage(n, StageHeld)
	if len(h.g.pushed) != 0 {
		t.Fatal("pushed without a maintainer's approval")
	}
	// A maintainer's approval pushes it and opens the pull request.
	h.say("alice", n, "/approve "+st.HeldSHA)
	h.tick()
	st = h.wantStage(n, StageAwaitingCI)
	pr := h.f.pull(st.PR)
	if pr.HeadSHA != st.PushApproved || st.HeldSHA != "" {
		t.Fatalf("pushed head %s, approved %s, held %q", pr.HeadSHA, st.PushApproved, st.HeldSHA)
	}
	if note := h.noteOn(n, "push"); !strings.Contains(note, "@alice approved it") {
		t.Fatalf("hold note after the approval:\n%s", note)
	}
	// CI fails; the fix touches no protected path: pushed at once.
	h.f.setStatus(pr.HeadSHA, forge.CIFailure, "red")
	h.tick()
	st = h.wantStage(n, StageAwaitingCI)
	if st.HeadSHA == st.PushApproved || h.f.pull(st.PR).HeadSHA != st.HeadSHA {
		t.Fatalf("fix not pushed: head %s, approved %s", st.HeadSHA, st.PushApproved)
	}
	// Its merge waits for an approval of the new head: the pull request
	// changes protected paths.
	if err := h.f.owner.SetPullDiff(st.PR, "diff --git a/.forgejo/workflows/ci.yml b/.forgejo/workflows/ci.yml\n"); err != nil {
		t.Fatal(err)
	}
	h.greenAndApproved(n)
	h.wantStage(n, StageAwaitingApproval)
	if note := h.noteOn(st.PR, "merge"); !strings.Contains(note, "it changes protected paths: `.forgejo/workflows/ci.yml`") {
		t.Fatalf("merge note:\n%s", note)
	}
	h.say("alice", st.PR, "/approve "+st.PushApproved) // the old head's approval is no longer enough
	h.tick()
	h.wantStage(n, StageAwaitingApproval)
	h.f.review(st.PR, "alice", forge.ReviewApprove, "ok")
	h.tick()
	if !h.f.pull(st.PR).Merged {
		t.Fatal("not merged after the maintainer approved the head")
	}
}

func TestProtectedHeadApprovedOnceIsMerged(t *testing.T) {
	h := newHarness(t, workflow())
	collaborators(t, h, forge.PermWrite)
	n := h.f.addIssue("Fix CI", "body", forge.LabelBacklog)
	h.tick()
	st := h.wantStage(n, StageHeld)
	h.say("alice", n, "/approve "+st.HeldSHA)
	h.tick()
	st = h.wantStage(n, StageAwaitingCI)
	if err := h.f.owner.SetPullDiff(st.PR, "diff --git a/.forgejo/workflows/ci.yml b/.forgejo/workflows/ci.yml\n"); err != nil {
		t.Fatal(err)
	}
	h.greenAndApproved(n)
	if !h.f.pull(st.PR).Merged {
		t.Fatal("the approved head was not merged: its approval before the push counts for the merge")
	}
	h.wantLedger(ledger.ReasonMerged, "")
}

func TestProtectedFixIsHeldAgain(t *testing.T) {
	h := newHarness(t, workflow([]string{".gitea/workflows/deploy.yml"}))
	collaborators(t, h, forge.PermWrite)
	n := h.f.addIssue("Fix CI", "body", forge.LabelBacklog)
	h.tick()
	st := h.wantStage(n, StageHeld)
	h.say("alice", n, "/approve "+st.HeldSHA)
	h.tick()
	st = h.wantStage(n, StageAwaitingCI)
	pushed := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(pushed, forge.CIFailure, "red")
	h.tick()
	st = h.wantStage(n, StageHeld)
	if h.f.pull(st.PR).HeadSHA != pushed {
		t.Fatal("a fix that changes a protected path again was pushed without an approval")
	}
	if note := h.noteOn(n, "push"); !strings.Contains(note, "/approve "+st.HeldSHA) || !strings.Contains(note, "deploy.yml") {
		t.Fatalf("the hold note does not ask about the new head:\n%s", note)
	}
	h.say("alice", st.PR, "/approve "+st.HeldSHA) // on the pull request this time
	h.tick()
	if st = h.wantStage(n, StageAwaitingCI); h.f.pull(st.PR).HeadSHA != st.PushApproved {
		t.Fatal("the approved fix was not pushed")
	}
}

func TestBlockedWhileHeld(t *testing.T) {
	h := newHarness(t, workflow())
	n := h.f.addIssue("Fix CI", "body", forge.LabelBacklog)
	h.tick()
	h.wantStage(n, StageHeld)
	if err := h.f.owner.AddLabels(t.Context(), n, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, codeApprovalRefused)
	if len(h.g.pushed) != 0 {
		t.Fatal("pushed")
	}
}

func TestChoreLevels(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ceiling  config.AutonomyLevel
		diff     string
		approve  bool
		merged   bool
		noteWant string
	}{
		{"auto", "", "", false, true, ""},
		{"approve waits", config.AutonomyApprove, "", false, false, "the gardener's autonomy level is `approve`"},
		{"approve approved", config.AutonomyApprove, "", true, true, ""},
		{"advisory", config.AutonomyAdvisory, "", true, false, "never merges its pull requests"},
		{"protected waits", "", "diff --git a/go.mod b/go.mod\n", false, false, "it changes protected paths: `go.mod`"},
		{"protected approved", "", "diff --git a/go.mod b/go.mod\n", true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, func(o *Options) {
				o.ChoreBots = map[string]string{"gardener": "gardener-bot"}
				o.Autonomy.Roles = map[config.Role]config.AutonomyLevel{config.RoleGardener: tc.ceiling}
			})
			collaborators(t, h, forge.PermWrite)
			g := h.f.fake.Repo("owner", "proj", "gardener-bot")
			if _, err := g.CreateBranch(t.Context(), "chore/gardener-1", "main"); err != nil {
				t.Fatal(err)
			}
			p, err := g.CreatePull(t.Context(), forge.NewPull{Title: "chore: groom", Head: "chore/gardener-1", Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.diff != "" {
				if err := h.f.owner.SetPullDiff(p.Number, tc.diff); err != nil {
					t.Fatal(err)
				}
			}
			h.f.setStatus(p.HeadSHA, forge.CISuccess, "ok")
			h.f.review(p.Number, "review-bot", forge.ReviewApprove, "ok")
			if tc.approve {
				h.say("alice", p.Number, fmt.Sprintf("/approve %s", p.HeadSHA))
			}
			h.tick()
			h.tick()
			if got := h.f.pull(p.Number).Merged; got != tc.merged {
				t.Fatalf("merged = %v, want %v", got, tc.merged)
			}
			notes := 0
			for _, c := range h.f.commentsOf(p.Number) {
				if c.Author == bot && strings.Contains(c.Body, "disinto:dev-wait") {
					notes++
					if !strings.Contains(c.Body, tc.noteWant) || tc.noteWant == "" {
						t.Errorf("note:\n%s\nwant %q", c.Body, tc.noteWant)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.noteWant != ""]; notes != want {
				t.Errorf("%d notes, want %d", notes, want)
			}
		})
	}
}

func TestApprovesCommit(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for body, want := range map[string]bool{
		"/approve " + sha:                        true,
		"ok\n  /approve   " + sha + "  \nthanks": true,
		"/approve " + strings.ToUpper(sha):       true,
		"/approve " + sha[:12]:                   false,
		"/approve " + sha + " and more":          false,
		"> /approve " + sha:                      false,
		"`/approve " + sha + "`":                 false,
		"/approved " + sha:                       false,
		"please /approve " + sha:                 false,
	} {
		if got := approvesCommit(body, sha); got != want {
			t.Errorf("approvesCommit(%q) = %v, want %v", body, got, want)
		}
	}
	if approvesCommit("/approve ", "") {
		t.Error("an empty commit id was approved")
	}
}

// TestOutsiderWorkAtMostApprove: an outsider's word never merges without
// a maintainer, whatever the project's level; a maintainer's keeps it.
func TestOutsiderWorkAtMostApprove(t *testing.T) {
	for _, tc := range []struct {
		level, outsider, maintainer config.AutonomyLevel
	}{
		{config.AutonomyAuto, config.AutonomyApprove, config.AutonomyAuto},
		{config.AutonomyApprove, config.AutonomyApprove, config.AutonomyApprove},
		{config.AutonomyAdvisory, config.AutonomyAdvisory, config.AutonomyAdvisory},
	} {
		h := newHarness(t, pushing, atLevel(tc.level))
		if got := h.a.level(State{Origin: provenance.Outsider}); got != tc.outsider {
			t.Errorf("level %s, an outsider's issue: %s, want %s", tc.level, got, tc.outsider)
		}
		if got := h.a.level(State{Origin: provenance.Maintainer}); got != tc.maintainer {
			t.Errorf("level %s, a maintainer's issue: %s, want %s", tc.level, got, tc.maintainer)
		}
	}
}
