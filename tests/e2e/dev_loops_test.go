package e2e

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// fixTurns is a session that implements, then fixes on every resume.
func fixTurns(rounds int) []claudetest.Turn {
	turns := []claudetest.Turn{implement("work.txt", "first try"), claudetest.Text("Pushed.")}
	for i := 0; i < rounds; i++ {
		turns = append(turns, implement("work.txt", "fix"), claudetest.Text("Fixed and pushed."))
	}
	return turns
}

func TestDevCILoop(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t,
		claudetest.Scenario{Name: "dev-ci-exhaust", Turns: fixTurns(4)},
		claudetest.Scenario{Name: "dev-ci-fix", Turns: fixTurns(2)},
	)
	b := e.newBot("dev-bot")

	// CI red four times: blocked with ci.exhausted, nothing merged.
	a := e.issue("Exhaust CI", "scenario: dev-ci-exhaust", forge.LabelBacklog)
	b.tick()
	for i := 0; i < 4; i++ {
		pr := e.onlyPull("fix/issue-1")
		e.ci(pr, forge.CIFailure, "TestWidget failed")
		b.tickUntil("CI failure handled", 3, func() bool {
			st := b.stage(a)
			return st == dev.StageBlocked || e.pull(pr.Number).HeadSHA != pr.HeadSHA
		})
	}
	if b.stage(a) != dev.StageBlocked || !hasComment(t, e.repo, a, "ci.exhausted") || e.onlyPull("fix/issue-1").Merged {
		t.Fatalf("after four red runs: stage %q", b.stage(a))
	}
	if !e.getIssue(a).HasLabel(forge.LabelBlocked) {
		t.Fatal("issue not labelled blocked")
	}
	fixes := e.model.MessageRequests("dev-ci-exhaust")
	if !anyText(fixes, "attempt 1/3") || !anyText(fixes, "TestWidget failed") || !anyText(fixes, "attempt 3/3") || anyText(fixes, "attempt 4/3") {
		t.Fatal("the resumed sessions did not get the CI failures")
	}

	// CI red twice, then green: merged.
	n := e.issue("Fix CI", "scenario: dev-ci-fix", forge.LabelBacklog)
	b.tickUntil("second issue claimed", 2, func() bool { return b.stage(n) == dev.StageAwaitingCI })
	for i := 0; i < 2; i++ {
		pr := e.onlyPull(branch(n))
		e.ci(pr, forge.CIFailure, "lint failed")
		b.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	}
	pr := e.onlyPull(branch(n))
	b.greenToMerge(e, n, pr)
	recs := b.records()
	if len(recs) != 2 || recs[0].Code != ledger.CodeCIExhausted || recs[1].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
}

func anyText(reqs []claudetest.Request, sub string) bool {
	for _, r := range reqs {
		for _, tx := range r.Texts {
			if strings.Contains(tx, sub) {
				return true
			}
		}
	}
	return false
}

func TestDevReviewLoop(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-review", Turns: fixTurns(1)})
	b := e.newBot("dev-bot")
	n := e.issue("Review me", "scenario: dev-review", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull("fix/issue-1")
	b.greenToReview(e, n, pr)
	e.review(pr, forge.ReviewRequestChanges, "Please rename foo to bar in work.txt.")
	b.tickUntil("changes pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	if !anyText(e.model.MessageRequests("dev-review"), "rename foo to bar") {
		t.Fatal("the model never saw the review text")
	}
	if !anyText(e.model.MessageRequests("dev-review"), "round 1/5") {
		t.Fatal("the review prompt does not count rounds")
	}
	pr = e.pull(pr.Number)
	b.greenToMerge(e, n, pr)
	if ps := e.allPulls(); len(ps) != 1 {
		t.Fatalf("more than one pull request: %+v", ps)
	}
}

func TestDevHeadMovedAfterApproval(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-moved", Turns: fixTurns(0)})
	b := e.newBot("dev-bot")
	n := e.issue("Move me", "scenario: dev-moved", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull("fix/issue-1")
	b.greenToReview(e, n, pr)
	e.review(pr, forge.ReviewApprove, "ok")

	// A human pushes to the branch after the approval.
	dir := e.ownerClone("fix/issue-1")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "unreviewed")
	runGit(t, dir, "push", "-q", "origin", "HEAD")
	moved := runGit(t, dir, "rev-parse", "HEAD")
	b.tickUntil("new head noticed", 3, func() bool {
		st, _, _ := b.a.State(n)
		return st.HeadSHA == moved
	})
	b.tick()
	if p := e.pull(pr.Number); p.Merged {
		t.Fatal("merged a head nobody reviewed")
	}
	if b.stage(n) != dev.StageAwaitingCI {
		t.Fatalf("stage %q, want awaiting_ci for the new head", b.stage(n))
	}
}
