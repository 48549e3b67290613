package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// rebaseTurn is a model step that rebases the branch onto main (the agent
// pushes it).
func rebaseTurn() claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(
		`git rebase -q origin/main && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo rebased`))
}

func TestDevRebaseWhenBehind(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-rebase", Turns: []claudetest.Turn{
		implement("work.txt", "the work"), claudetest.Text("Pushed."),
		rebaseTurn(), claudetest.Text("Rebased."),
	}})
	b := e.newBot("dev-bot")
	n := e.issue("Rebase me", "scenario: dev-rebase", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull(branch(n))
	b.greenToReview(e, n, pr)

	// Meanwhile a human lands a change on main: the approved branch is behind.
	dir := e.ownerClone("")
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("landed first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "other.txt")
	runGit(t, dir, "commit", "-q", "-m", "land another change")
	runGit(t, dir, "push", "-q", "origin", "HEAD:main")

	e.review(pr, forge.ReviewApprove, "ok")
	b.tickUntil("rebased head pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	if p := e.pull(pr.Number); p.Merged {
		t.Fatal("merged a branch that was behind main")
	}
	reqs := e.model.MessageRequests("dev-rebase")
	if !anyText(reqs, "fallen behind main") || !anyText(reqs, "rebase 1/3") {
		t.Fatal("the resumed session was not asked to rebase")
	}

	pr = e.pull(pr.Number)
	b.greenToMerge(e, n, pr)
	runGit(t, dir, "pull", "-q", "origin", "main")
	for _, f := range []string{"work.txt", "other.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("main after the merge: %v", err)
		}
	}
	if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
}
