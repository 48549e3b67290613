package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// landOnMain pushes a commit writing name to main as a human would, and
// returns the owner's clone.
func (e *devEnv) landOnMain(t *testing.T, name, content string) string {
	t.Helper()
	dir := e.ownerClone("")
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", name)
	runGit(t, dir, "commit", "-q", "-m", "land "+name)
	runGit(t, dir, "push", "-q", "origin", "HEAD:main")
	return dir
}

// filesAt lists the files of commit sha, fetched into the clone at dir.
func filesAt(t *testing.T, dir, sha string) string {
	t.Helper()
	runGit(t, dir, "fetch", "-q", "origin")
	return runGit(t, dir, "ls-tree", "--name-only", sha)
}

// TestDevGitRebaseWhenBehind: an approved branch that fell behind main is
// rebased by the agent without a model session when that is clean. The
// pull request gets a new head, CI and review run again on it, and it
// merges. A fix session after the rebase builds on the rebased head and
// never pushes the old history back.
func TestDevGitRebaseWhenBehind(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-gitrebase", Turns: []claudetest.Turn{
		implement("work.txt", "the work"), claudetest.Text("Pushed."),
		implement("fix.txt", "the fix"), claudetest.Text("Fixed."),
	}})
	b := e.newBot("dev-bot")
	n := e.issue("Rebase me by git", "scenario: dev-gitrebase", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull(branch(n))
	b.greenToReview(e, n, pr)
	dir := e.landOnMain(t, "other.txt", "landed first\n")
	asked := len(e.model.MessageRequests("dev-gitrebase"))

	e.review(pr, forge.ReviewApprove, "ok")
	b.tickUntil("rebased head pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	if got := len(e.model.MessageRequests("dev-gitrebase")); got != asked {
		t.Fatalf("the model was asked %d more times for a clean rebase", got-asked)
	}
	rebased := e.pull(pr.Number)
	if rebased.Merged || b.stage(n) != dev.StageAwaitingCI {
		t.Fatalf("after the rebase: merged %v, stage %s", rebased.Merged, b.stage(n))
	}
	if files := filesAt(t, dir, rebased.HeadSHA); !strings.Contains(files, "work.txt") || !strings.Contains(files, "other.txt") {
		t.Fatalf("rebased head %s has %s", rebased.HeadSHA, files)
	}
	runGit(t, dir, "merge-base", "--is-ancestor", "origin/main", rebased.HeadSHA)

	// CI fails on the rebased head: the session fixes it in its checkout,
	// which must now be on the rebased history.
	e.ci(rebased, forge.CIFailure, "tests failed")
	b.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != rebased.HeadSHA })
	fixed := e.pull(pr.Number)
	runGit(t, dir, "fetch", "-q", "origin")
	runGit(t, dir, "merge-base", "--is-ancestor", rebased.HeadSHA, fixed.HeadSHA)
	if files := filesAt(t, dir, fixed.HeadSHA); !strings.Contains(files, "other.txt") || !strings.Contains(files, "fix.txt") {
		t.Fatalf("fixed head %s has %s", fixed.HeadSHA, files)
	}

	// The approval was for the old head: green CI leads to a new review.
	b.greenToReview(e, n, fixed)
	if e.pull(pr.Number).Merged {
		t.Fatal("merged the new head on the old head's approval")
	}
	e.review(fixed, forge.ReviewApprove, "still ok")
	b.tickUntil("merged", 3, func() bool { return e.pull(pr.Number).Merged })
	if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
}

// TestDevFreshBranchAndPriorArt: an issue whose pull request was closed
// unmerged, sent back by a maintainer, is worked on fix/issue-N-2, and
// the model's first request of the fresh attempt carries the abandoned
// pull request as prior art: its diff and its last review.
func TestDevFreshBranchAndPriorArt(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-retry", Turns: []claudetest.Turn{
		implement("first.txt", "first-attempt-marker"), claudetest.Text("Pushed."),
		implement("second.txt", "second try"), claudetest.Text("Pushed again."),
	}})
	b := e.newBot("dev-bot")
	n := e.issue("Try twice", "scenario: dev-retry", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull(branch(n))
	e.review(pr, forge.ReviewRequestChanges, "Wrong-approach-marker: start over.")
	ctx := testCtx(t)
	if err := e.repo.ClosePull(ctx, pr.Number); err != nil {
		t.Fatal(err)
	}
	b.tickUntil("blocked", 3, func() bool { return b.stage(n) == dev.StageBlocked })
	if err := e.repo.RemoveLabels(ctx, n, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	if err := e.repo.AddLabels(ctx, n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	before := len(e.model.MessageRequests("dev-retry"))
	b.tickUntil("second pull request", 3, func() bool { return len(e.pullsFor(branch(n)+"-2")) == 1 })
	second := e.onlyPull(branch(n) + "-2")
	if second.State != forge.StateOpen || second.Number == pr.Number {
		t.Fatalf("second attempt: %+v", second)
	}
	reqs := e.model.MessageRequests("dev-retry")[before:]
	if len(reqs) == 0 {
		t.Fatal("no request of the fresh attempt")
	}
	first := reqs[:1]
	for _, want := range []string{"Prior art", "first-attempt-marker", "Wrong-approach-marker", "fix/issue-1-2"} {
		if !anyText(first, want) {
			t.Errorf("the fresh attempt's first request lacks %q", want)
		}
	}
}
