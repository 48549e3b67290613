package dev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
)

// driveToPR claims issue n and returns its state awaiting CI.
func driveToPR(t *testing.T, h *harness, n int64) State {
	t.Helper()
	h.tick()
	return h.wantStage(n, StageAwaitingCI)
}

func TestHappyPath(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Add a widget", "Please add a widget.", forge.LabelBacklog)
	st := driveToPR(t, h, n)

	pr := h.f.pull(st.PR)
	if pr.Title != "fix: Add a widget (#1)" || !strings.HasPrefix(pr.Body, "Fixes #1\n\n## Changes") || pr.Head != "fix/issue-1" {
		t.Fatalf("pull request %q / %q / %q", pr.Title, pr.Body, pr.Head)
	}
	if i := h.f.issue(n); !i.AssignedTo(bot) || !i.HasLabel(forge.LabelInProgress) || i.HasLabel(forge.LabelBacklog) {
		t.Fatalf("claimed issue: %+v", i)
	}
	calls := h.r.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d sessions, want 1", len(calls))
	}
	inv := calls[0]
	for _, k := range []string{formula.EnvPhaseFile, formula.EnvResultFile, formula.EnvBranch, formula.EnvPrimaryBranch, "DISINTO_ISSUE"} {
		if inv.Env[k] == "" {
			t.Errorf("session env lacks %s", k)
		}
	}
	if !strings.Contains(inv.Prompt, "Please add a widget.") || !strings.Contains(inv.Prompt, inv.Env[formula.EnvPhaseFile]) {
		t.Errorf("prompt lacks the issue body or the phase file:\n%s", inv.Prompt)
	}

	h.tick() // CI pending: nothing happens
	h.wantStage(n, StageAwaitingCI)
	h.f.setStatus(pr.HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.wantStage(n, StageAwaitingReview)
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "LGTM")
	h.tick()

	if p := h.f.pull(st.PR); !p.Merged {
		t.Fatal("not merged")
	}
	i := h.f.issue(n)
	if i.State != forge.StateClosed || len(i.Labels) != 0 || len(i.Assignees) != 0 {
		t.Fatalf("issue after merge: %+v", i)
	}
	if _, ok := h.state(n); ok {
		t.Fatal("state kept after merge")
	}
	if _, err := os.Stat(st.Worktree); !errors.Is(err, fs.ErrNotExist) || len(h.v.filed()) != 1 {
		t.Fatalf("workspace %s after merge: %v; mirror requests %v", st.Worktree, err, h.v.filed())
	}
	rec := h.wantLedger(ledger.ReasonMerged, "")
	if rec.CostUSD != 0.25 || rec.SessionID != "sess-1" || rec.PR != st.PR || rec.InputTokens != 100 {
		t.Fatalf("ledger record %+v", rec)
	}
	if len(h.r.Calls()) != 1 {
		t.Fatalf("merge needed %d sessions, want 1", len(h.r.Calls()))
	}
}

func TestCIFixLoop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reds    int
		merged  bool
		session int
	}{
		{"red twice then green", 2, true, 3},
		{"red four times", 4, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, pushing)
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			st := driveToPR(t, h, n)
			for i := 0; i < tc.reds; i++ {
				h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "unit tests failed: TestWidget")
				h.tick()
			}
			if tc.merged {
				h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
				h.tick()
				h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
				h.tick()
				h.wantLedger(ledger.ReasonMerged, "")
			} else {
				h.wantStage(n, StageBlocked)
				h.wantComment(n, "ci.exhausted")
				h.wantLabels(n, forge.LabelBlocked)
				if h.f.pull(st.PR).Merged {
					t.Fatal("merged after exhausting CI")
				}
				h.wantLedger(ledger.ReasonBlocked, ledger.CodeCIExhausted)
			}
			calls := h.r.Calls()
			if len(calls) != tc.session {
				t.Fatalf("%d sessions, want %d", len(calls), tc.session)
			}
			fix := calls[1]
			if fix.ResumeID != "sess-1" || !strings.Contains(fix.Prompt, "attempt 1/3") ||
				!strings.Contains(fix.Prompt, "unit tests failed: TestWidget") || !strings.Contains(fix.Prompt, "http://ci.invalid/pipeline/7") {
				t.Fatalf("fix session: resume %q prompt %q", fix.ResumeID, fix.Prompt)
			}
		})
	}
}

func TestInfraFailureRetriedOnce(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(head, forge.CIFailure, "clone: failed to connect to forge")
	h.tick()
	if got := h.f.pull(st.PR).HeadSHA; got == head {
		t.Fatal("no retrigger commit pushed")
	}
	if len(h.r.Calls()) != 1 {
		t.Fatal("infra failure resumed the model")
	}
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "clone: failed to connect to forge")
	h.tick()
	if len(h.r.Calls()) != 2 {
		t.Fatal("second infra failure not treated as a code failure")
	}
}

func TestReviewLoop(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "Please rename foo to bar.")
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 || !strings.Contains(calls[1].Prompt, "rename foo to bar") || !strings.Contains(calls[1].Prompt, "round 1/5") {
		t.Fatalf("review session: %+v", calls)
	}
	h.wantStage(n, StageAwaitingCI)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
}

func TestReviewExhausted(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	for i := 0; i < 6; i++ {
		h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
		h.tick()
		h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "no")
		h.tick()
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, ledger.CodeReviewExhausted)
}

func TestOnlyReviewBotCounts(t *testing.T) {
	h := newHarness(t, pushing, func(o *Options) { o.ReviewBot = "review-bot" })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.f.review(st.PR, "mallory", forge.ReviewApprove, "ship it")
	h.tick()
	if h.f.pull(st.PR).Merged {
		t.Fatal("merged on a stranger's approval")
	}
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
}

func TestHeadMovedAfterApproval(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	// Someone pushes after the approval, before the agent's next tick.
	if err := h.g.pushSHA(h.g.commit(st.Worktree), st.Branch); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if h.f.pull(st.PR).Merged {
		t.Fatal("merged an unreviewed head")
	}
	h.wantStage(n, StageAwaitingCI)
}

func TestMergeRaceHeadMismatch(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	st = h.wantStage(n, StageAwaitingReview)
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	st.ReviewedSHA, st.run = "0000000000000000000000000000000000000bad", direct{h.led}
	if err := h.a.merge(t.Context(), nil, &st); err != nil {
		t.Fatal(err)
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, ledger.CodeMergeHeadMismatch)
}

func TestNoCI(t *testing.T) {
	h := newHarness(t, pushing, func(o *Options) { o.CISystem = "none" })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result string
		reason ledger.Reason
		code   ledger.Code
		check  func(t *testing.T, h *harness, n int64)
	}{
		{"too large", `{"status":"too_large","reason":"three features","evidence":[{"file":"a.go","line":3,"note":"x"}]}`,
			ledger.ReasonRefused, ledger.CodeRefusedTooLarge, func(t *testing.T, h *harness, n int64) {
				h.wantLabels(n, forge.LabelUnderspecified)
				h.wantComment(n, "Too large for single session")
				if !h.f.issue(n).AssignedTo(bot) {
					t.Error("assignee dropped")
				}
			}},
		{"already done", `{"status":"already_done","reason":"exists","evidence":[{"file":"widget.go","line":12,"note":"the widget"}]}`,
			ledger.ReasonRefused, ledger.CodeRefusedAlreadyDone, func(t *testing.T, h *harness, n int64) {
				if h.f.issue(n).State != forge.StateClosed {
					t.Error("not closed")
				}
				h.wantComment(n, "`widget.go:12`")
			}},
		{"already done without evidence", `{"status":"already_done","reason":"trust me"}`,
			ledger.ReasonBlocked, ledger.CodeBuilderNoEvidence, func(t *testing.T, h *harness, n int64) {
				h.wantLabels(n, forge.LabelBlocked)
				h.wantComment(n, "builder.no_evidence")
			}},
		{"unmet dependency", `{"status":"unmet_dependency","reason":"needs the API","dependency":7}`,
			ledger.ReasonRefused, ledger.CodeRefusedUnmetDep, func(t *testing.T, h *harness, n int64) {
				h.wantLabels(n, forge.LabelBacklog)
				h.wantComment(n, "#7")
				if len(h.f.issue(n).Assignees) != 0 {
					t.Error("still assigned")
				}
				h.tick() // the same text is not picked again
				if len(h.r.Calls()) != 1 {
					t.Error("refused issue picked again")
				}
			}},
		{"not json", `not json`, ledger.ReasonBlocked, ledger.Code("builder.bad_result"), nil},
		{"unknown status", `{"status":"bored","reason":"meh"}`, ledger.ReasonBlocked, ledger.Code("builder.bad_result"), nil},
		{"unmet dependency without the dependency", `{"status":"unmet_dependency","reason":"needs something"}`,
			ledger.ReasonBlocked, ledger.Code("builder.bad_result"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
				return h.writeResult(inv, tc.result)
			})
			h.f.addIssue("Dependency", "open one")
			h.f.addIssue("filler", "x")
			h.f.addIssue("filler", "x")
			h.f.addIssue("filler", "x")
			h.f.addIssue("filler", "x")
			h.f.addIssue("filler", "x")
			n := h.f.addIssue("Big thing", "body", forge.LabelBacklog)
			h.tick()
			h.wantLedger(tc.reason, tc.code)
			if tc.check != nil {
				tc.check(t, h, n)
			}
		})
	}
}

func TestNudgeThenNoCommit(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		return okResult(), nil
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 || calls[1].Prompt != h.followup(followNudge) || calls[1].ResumeID != "sess-1" {
		t.Fatalf("want one nudge, got %d calls", len(calls))
	}
	h.wantStage(n, StageBlocked)
	h.wantLedger(ledger.ReasonBlocked, ledger.CodeBuilderNoCommit)
}

func TestNudgeThenPush(t *testing.T) {
	h := newHarness(t, func(h *harness, n int, inv claude.Invocation) (claude.Result, error) {
		if n == 0 {
			return okResult(), nil
		}
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.tick()
	h.wantStage(n, StageAwaitingCI)
}

func TestSessionEndings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      model
		reason ledger.Reason
		code   ledger.Code
		stage  Stage
		text   string
	}{
		{"escalate", func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
			return h.writePhase(inv, phase.Escalate, "the spec contradicts itself")
		}, ledger.ReasonEscalated, ledger.CodeEscalatedByModel, StageEscalated, "the spec contradicts itself"},
		{"failed", func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
			return h.writePhase(inv, phase.Failed, "cannot build")
		}, ledger.ReasonBlocked, ledger.Code("builder.failed"), StageBlocked, "cannot build"},
		{"crash", func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
			return claude.Result{ExitCode: 1}, &claude.CrashError{ExitCode: 1, Stderr: "boom s3cr3t-value"}
		}, ledger.ReasonBlocked, ledger.CodeClaudeCrashed, StageBlocked, "boom"},
		{"timeout", func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
			return claude.Result{TimedOut: true}, claude.ErrTimeout
		}, ledger.ReasonBlocked, ledger.CodeClaudeTimeout, StageBlocked, "claude.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.m)
			n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
			h.tick()
			h.wantStage(n, tc.stage)
			h.wantLedger(tc.reason, tc.code)
			h.wantComment(n, tc.text)
			h.wantLabels(n, forge.LabelBlocked)
			if tc.code == ledger.CodeClaudeCrashed || tc.code == ledger.CodeClaudeTimeout {
				ws, err := h.a.workspace(n)
				if err != nil {
					t.Fatal(err)
				}
				if ps, err := phase.Read(h.a.phaseFile(ws)); err != nil || ps.Phase != phase.Crashed {
					t.Errorf("phase file after a dead session: %+v, %v; want crashed", ps, err)
				}
			}
			for _, c := range h.f.commentsOf(n) {
				if strings.Contains(c.Body, "s3cr3t-value") {
					t.Fatal("secret posted")
				}
			}
		})
	}
}

func TestQueue(t *testing.T) {
	h := newHarness(t, nil)
	f := h.f
	dep := f.addIssue("dependency", "open")                                            // 1
	blocked := f.addIssue("needs 1", "## Depends on\n- #1\n", forge.LabelBacklog)      // 2
	formulaIssue := f.addIssue("formula", "x", forge.LabelBacklog, forge.LabelFormula) // 3
	theirs := f.addIssue("theirs", "x", forge.LabelBacklog)                            // 4
	old := f.addIssue("old", "x", forge.LabelBacklog)                                  // 5
	prio := f.addIssue("urgent", "x", forge.LabelBacklog, forge.LabelPriority)         // 6
	vision := f.addIssue("vision", "x", forge.LabelVision, forge.LabelInProgress)      // 7
	f.assign(theirs, "dev-qwen")
	snap := newSnapshot(bot, mustList(t, f), nil)
	var got []int64
	for _, i := range h.a.candidates(snap) {
		got = append(got, i.Number)
	}
	if len(got) != 2 || got[0] != prio || got[1] != old {
		t.Fatalf("queue %v, want [%d %d]", got, prio, old)
	}
	_ = []int64{dep, blocked, formulaIssue, vision}
	f.close(dep)
	snap = newSnapshot(bot, mustList(t, f), nil)
	if c := h.a.candidates(snap); len(c) != 3 {
		t.Fatalf("after the dependency closed: %d candidates, want 3", len(c))
	}
}

func mustList(t *testing.T, f *world) []forge.Issue {
	t.Helper()
	is, err := f.bot.ListIssues(t.Context(), forge.IssueQuery{State: forge.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func TestDependencyGate(t *testing.T) {
	h := newHarness(t, pushing)
	dep := h.f.addIssue("dependency", "open")
	n := h.f.addIssue("needs 1", "This depends on #1.", forge.LabelBacklog)
	h.tick()
	if len(h.r.Calls()) != 0 {
		t.Fatal("picked an issue with an open dependency")
	}
	h.f.close(dep)
	h.tick()
	h.wantStage(n, StageAwaitingCI)
}

func TestPerAgentGate(t *testing.T) {
	h := newHarness(t, pushing)
	a := h.f.addIssue("first", "x", forge.LabelBacklog)
	b := h.f.addIssue("second", "x", forge.LabelBacklog)
	h.tick()
	h.wantStage(a, StageAwaitingCI)
	h.tick()
	if _, ok := h.state(b); ok {
		t.Fatal("took new work while own PR waits")
	}
}

func TestClaimLost(t *testing.T) {
	h := newHarness(t, pushing)
	h.f.addIssue("x", "x", forge.LabelBacklog)
	h.f.fake.FailNext("Claim", forge.ErrClaimed)
	h.tick()
	if len(h.r.Calls()) != 0 {
		t.Fatal("worked an issue it did not claim")
	}
}

func TestStaleInProgress(t *testing.T) {
	h := newHarness(t, nil)
	stale := h.f.addIssue("stale", "x", forge.LabelInProgress)
	vision := h.f.addIssue("vision", "x", forge.LabelInProgress, forge.LabelVision)
	h.tick()
	h.wantLabels(stale, forge.LabelInProgress) // within the grace period
	h.advanceClock(2 * h.a.lim.ClaimGrace)
	h.tick()
	h.wantLabels(stale, forge.LabelBlocked)
	h.wantComment(stale, "Stale in-progress issue detected")
	h.wantLabels(vision, forge.LabelInProgress, forge.LabelVision)
}

func TestRestartResumes(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	// A new process over the same data dir finishes the issue.
	h.a = h.newAgent()
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
	if ps := h.f.pulls(); len(ps) != 1 {
		t.Fatalf("%d pull requests", len(ps))
	}
}

func TestRestartMidSessionResumesSession(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := h.a.newState(h.f.issue(n))
	st.Stage, st.SessionID = StageImplementing, "sess-0"
	h.f.assign(n, bot)
	if err := h.f.owner.RemoveLabels(t.Context(), n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(t.Context(), n, forge.LabelInProgress); err != nil {
		t.Fatal(err)
	}
	if err := h.a.st.save(st); err != nil {
		t.Fatal(err)
	}
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 1 || calls[0].ResumeID != "sess-0" || calls[0].Prompt != h.followup(followRestart) {
		t.Fatalf("calls %+v", calls)
	}
	h.wantStage(n, StageAwaitingCI)
}

func TestAdoptWithoutState(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	if err := h.a.st.remove(n); err != nil { // the state volume was lost
		t.Fatal(err)
	}
	h.a = h.newAgent()
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
	if ps := h.f.pulls(); len(ps) != 1 || len(h.r.Calls()) != 1 {
		t.Fatalf("%d pull requests, %d sessions", len(ps), len(h.r.Calls()))
	}
}

func TestIdleTickCost(t *testing.T) {
	h := newHarness(t, nil)
	for i := 0; i < 20; i++ {
		h.f.addIssue("dep", "x")
	}
	for i := 0; i < 10; i++ {
		h.f.addIssue("blocked", "Depends on #1", forge.LabelBacklog)
	}
	h.tick()
	before := h.f.fake.Calls()
	h.tick()
	if calls, got := h.f.callsSince(before); got != 2 {
		t.Fatalf("idle tick made %d forge calls, want 2: %v", got, calls)
	}
}

func TestSessionPhase(t *testing.T) {
	for _, tc := range []struct {
		name, content string // content "-" leaves no file
		phase         phase.Phase
		reason        string
	}{
		{"awaiting ci", "PHASE:awaiting_ci\n", phase.AwaitingCI, ""},
		{"escalate with reason", "  PHASE:escalate \nReason: ask a human\n", phase.Escalate, "ask a human"},
		{"unknown phase", "PHASE:bogus\n", "", ""},
		{"chatter after the phase", "PHASE:done\nall good\n", "", ""},
		{"empty", "", "", ""},
		{"missing", "-", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			st := State{Issue: 1, run: direct{h.led}}
			ws, err := h.a.workspace(1)
			if err != nil {
				t.Fatal(err)
			}
			if tc.content != "-" {
				if err := os.WriteFile(h.a.phaseFile(ws), []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := h.a.sessionPhase(ws, &st)
			if err != nil || got.Phase != tc.phase || got.Reason != tc.reason {
				t.Errorf("%q: got %+v, %v; want %q %q", tc.content, got, err, tc.phase, tc.reason)
			}
		})
	}
}

func TestIssueOfBranch(t *testing.T) {
	for in, want := range map[string]int64{"fix/issue-12": 12, "fix/issue-12-1": 12, "chore/x": 0, "fix/issue-x": 0} {
		if got := issueOfBranch(in); got != want {
			t.Errorf("%s: %d, want %d", in, got, want)
		}
	}
}

func TestPublishRetriedWithoutModel(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.f.fake.FailNext("CreatePull", forge.ErrUnavailable)
	h.tick()
	h.wantStage(n, StagePublishing)
	h.tick()
	h.wantStage(n, StageAwaitingCI)
	if len(h.r.Calls()) != 1 {
		t.Fatalf("%d sessions, want 1: a failed publish must not re-run the model", len(h.r.Calls()))
	}
}

// TestCommitsOutweighARefusal: a session that committed work and also
// wrote a refusal has done the work; the commits go to a pull request
// (sessions no longer push, so "nothing pushed" cannot tell them apart).
func TestCommitsOutweighARefusal(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		if _, err := h.writeResult(inv, `{"status":"too_large","reason":"changed my mind"}`); err != nil {
			return claude.Result{}, err
		}
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.tick()
	st := h.wantStage(n, StageAwaitingCI)
	if st.PR == 0 || h.f.issue(n).HasLabel(forge.LabelUnderspecified) {
		t.Fatalf("committed work refused: %+v", st)
	}
}

// TestBackendOutageIsNoStrike: a model backend that is rate limited or
// refuses the key leaves the issue waiting (no block, no strike, however
// often); the session runs again once the backend answers.
func TestBackendOutageIsNoStrike(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		if down.Load() {
			return claude.Result{HasResult: true, IsError: true, APIErrorStatus: 429}, &claude.APIError{Status: 429, Text: "rate limited"}
		}
		return h.implement(inv, phase.AwaitingCI)
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	for range maxAfterFailures + 3 {
		h.tick()
	}
	if st, ok := h.state(n); !ok || st.Stage.Terminal() || st.StartFailures != 0 {
		t.Fatalf("after a backend outage: %+v, %v", st, ok)
	}
	if h.f.issue(n).HasLabel(forge.LabelBlocked) {
		t.Fatal("a backend outage blocked the issue")
	}
	down.Store(false)
	h.tick()
	h.tick()
	if st := h.wantStage(n, StageAwaitingCI); st.PR == 0 {
		t.Fatalf("no pull request after the backend came back: %+v", st)
	}
}

// TestRefusedCheckoutBlocks: a session checkout the git backend refuses
// unread blocks the issue with session.refused, and nothing is pushed;
// so does one refused before a session starts.
func TestRefusedCheckoutBlocks(t *testing.T) {
	refused := &git.UnsafeCheckoutError{Path: "/x/repo/.git/objects/info/alternates", Why: "leads git to another repository"}
	t.Run("after the session", func(t *testing.T) {
		h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
			h.g.commit(inv.Dir)
			return okResult(), nil
		})
		h.g.collectErr = refused
		n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
		h.tick()
		h.wantStage(n, StageBlocked)
		h.wantLedger(ledger.ReasonBlocked, ledger.CodeSessionRefused)
		if pulls := h.f.pulls(); len(pulls) != 0 {
			t.Errorf("pull requests from a refused checkout: %+v", pulls)
		}
	})
	t.Run("before the session", func(t *testing.T) {
		h := newHarness(t, func(*harness, int, claude.Invocation) (claude.Result, error) { return okResult(), nil })
		h.g.worktreeErr = refused
		n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
		h.tick()
		h.wantStage(n, StageBlocked)
		h.wantLedger(ledger.ReasonBlocked, ledger.CodeSessionRefused)
		if calls := h.r.Calls(); len(calls) != 0 {
			t.Errorf("%d sessions ran in a refused checkout", len(calls))
		}
	})
}

// TestSpentBudgetWaits: a spent budget holds the issue without a strike,
// says so once on the issue, and the work goes on once the budget lifts.
func TestSpentBudgetWaits(t *testing.T) {
	spent := true
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		if spent {
			return claude.Result{}, fmt.Errorf("%w: the day budget of p (1000 tokens) is spent", claude.ErrBudgetExhausted)
		}
		h.g.commit(inv.Dir)
		return okResult(), nil
	})
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	for range 3 {
		h.tick()
	}
	st := h.wantStage(n, StageImplementing)
	if st.StartFailures != 0 || !st.BudgetNoted {
		t.Errorf("state after a spent budget: %+v", st)
	}
	said := 0
	for _, c := range h.f.commentsOf(n) {
		if strings.Contains(c.Body, "budget") {
			said++
		}
	}
	if said != 1 {
		t.Fatalf("%d comments about the budget, want 1", said)
	}
	h.wantComment(n, "day budget of p (1000 tokens)")
	spent = false
	h.tick()
	if st, _ := h.state(n); st.Stage == StageImplementing || st.BudgetNoted {
		t.Errorf("once the budget lifted: %+v", st)
	}
}

// TestIssueBudget: an issue whose runs used its budget starts no session.
func TestIssueBudget(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		res := okResult()
		res.Usage = claude.Usage{InputTokens: 900, OutputTokens: 200}
		return res, claude.ErrRateLimited // retried at the next tick
	}, func(o *Options) { o.Limits.IssueBudget.Tokens = 1000 })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.tick() // one session: 1100 tokens, past the issue's budget
	h.tick()
	if calls := len(h.r.Calls()); calls != 1 {
		t.Errorf("%d sessions, want 1: the issue's budget is spent", calls)
	}
	h.wantComment(n, "issue budget of 1000 tokens is spent")
}

// TestIssueBudgetInDollars: an issue whose runs cost its budget in
// dollars starts no session.
func TestIssueBudgetInDollars(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		res := okResult()
		res.CostUSD = 1.25
		return res, claude.ErrRateLimited // retried at the next tick
	}, func(o *Options) { o.Limits.IssueBudget.USD = 1 })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	h.tick()
	h.tick()
	if calls := len(h.r.Calls()); calls != 1 {
		t.Errorf("%d sessions, want 1: the issue's budget is spent", calls)
	}
	h.wantComment(n, "issue budget of $1.00 is spent ($1.25 used)")
}
