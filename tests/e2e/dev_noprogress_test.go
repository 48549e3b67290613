package e2e

import (
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// emptyTurn ends a resumed turn saying the work is done, committing
// nothing.
func emptyTurn() []claudetest.Turn {
	return []claudetest.Turn{
		claudetest.Tools(claudetest.Bash(`printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo done`)),
		claudetest.Text("All points addressed."),
	}
}

// TestDevFixTurnWithoutCommit: after a change request, a fix turn that
// commits nothing is asked once more, and the second empty turn blocks
// the issue with builder.no_progress in the same tick, instead of waiting
// out the review timeout.
func TestDevFixTurnWithoutCommit(t *testing.T) {
	t.Parallel()
	turns := []claudetest.Turn{implement("work.txt", "first try"), claudetest.Text("Pushed.")}
	turns = append(append(turns, emptyTurn()...), emptyTurn()...)
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-no-progress", Turns: turns})
	b := e.newBot("dev-bot")
	n := e.issue("Answer the review", "scenario: dev-no-progress", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull(branch(n))
	b.greenToReview(e, n, pr)
	e.review(pr, forge.ReviewRequestChanges, "Please rename foo to bar in work.txt.")

	b.tick() // the fix turn, the one more ask, and the block: one tick
	if got := b.stage(n); got != dev.StageBlocked {
		t.Fatalf("stage %q after the second empty turn, want blocked", got)
	}
	if !hasComment(t, e.repo, n, string(ledger.CodeBuilderNoProgress)) {
		t.Fatal("no blocked comment names builder.no_progress")
	}
	if !anyText(e.model.MessageRequests("dev-no-progress"), "without a new commit") {
		t.Fatal("the session was never asked again after its empty turn")
	}
	if got := e.pull(pr.Number).HeadSHA; got != pr.HeadSHA {
		t.Fatalf("head moved from %s to %s", pr.HeadSHA, got)
	}
	recs := b.records()
	if len(recs) != 1 || recs[0].Code != ledger.CodeBuilderNoProgress {
		t.Fatalf("ledger: %+v", recs)
	}
}
