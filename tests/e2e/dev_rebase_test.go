package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// rebaseTurn is a model step that rebases the branch onto main, resolving
// the conflict on work.txt by keeping both sides (the agent pushes it).
func rebaseTurn() claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(
		`{ git rebase -q origin/main || { printf 'landed first\nthe work\n' > work.txt && git add work.txt && GIT_EDITOR=true git rebase --continue; }; } ` +
			`&& printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo rebased`))
}

// TestDevRebaseWhenBehind: an approved branch that fell behind main and
// conflicts with it cannot be rebased by the agent alone; the session is
// resumed to rebase and resolve the conflict.
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

	// Meanwhile a human lands a conflicting change on main: the approved
	// branch is behind, and git alone cannot rebase it.
	dir := e.ownerClone("")
	if err := os.WriteFile(filepath.Join(dir, "work.txt"), []byte("landed first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "work.txt")
	runGit(t, dir, "commit", "-q", "-m", "land a conflicting change")
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
	if data, err := os.ReadFile(filepath.Join(dir, "work.txt")); err != nil || string(data) != "landed first\nthe work\n" {
		t.Fatalf("main after the merge: work.txt = %q, %v", data, err)
	}
	if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
}
