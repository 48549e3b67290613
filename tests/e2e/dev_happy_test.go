package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/vault"
)

func TestDevHappyPath(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-happy", Turns: []claudetest.Turn{
		implement("widget.txt", "a widget"),
		claudetest.Text("Added widget.txt."),
	}})
	b := e.newBot("dev-bot")
	mv := e.newMirrorVault()
	b.rebuild(func(o *dev.Options) { o.MirrorVault = mv.requester() })
	n := e.issue("Add a widget", "scenario: dev-happy\n\nAdd widget.txt.", forge.LabelBacklog)

	b.tick()
	if got := b.stage(n); got != dev.StageAwaitingCI {
		t.Fatalf("stage after the session: %q", got)
	}
	pr := e.onlyPull("fix/issue-1")
	if !strings.HasPrefix(pr.Body, "Fixes #1") || pr.Title != "fix: Add a widget (#1)" {
		t.Fatalf("pull request %q: %q", pr.Title, pr.Body)
	}
	if i := e.getIssue(n); !i.HasLabel(forge.LabelInProgress) || !i.AssignedTo(b.user.Login) {
		t.Fatalf("issue while in progress: %+v", i)
	}

	b.greenToMerge(e, n, pr)

	i := e.getIssue(n)
	if i.State != forge.StateClosed || i.HasLabel(forge.LabelInProgress) || i.HasLabel(forge.LabelBacklog) || len(i.Assignees) != 0 {
		t.Fatalf("issue after merge: %+v", i)
	}
	if _, err := os.Stat(b.data + "/worktrees/proj/issue-1"); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	// The merge asked the vault for the mirror push, which its
	// dispatcher runs.
	merged := e.pull(pr.Number).MergedSHA
	id := vault.MirrorActionID("backup", merged)
	pushed := false
	for _, en := range mv.dispatch(b.opts.Mirrors) {
		pushed = pushed || en.ID == id && en.Result != nil && en.Result.Status == vault.StatusSucceeded
	}
	if !pushed {
		t.Fatalf("no succeeded vault action %s", id)
	}
	if got := runGit(t, e.mirror, "rev-parse", "refs/heads/main"); got != merged {
		t.Fatalf("mirror main %s, merged %s", got, merged)
	}
	recs := b.records()
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged || recs[0].CostUSD <= 0 || recs[0].InputTokens == 0 || recs[0].PR != pr.Number {
		t.Fatalf("ledger: %+v", recs)
	}
}
