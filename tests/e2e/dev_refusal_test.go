package e2e

import (
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

func TestDevRefusals(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t,
		claudetest.Scenario{Name: "dev-too-large", Turns: []claudetest.Turn{
			refuse(`{"status":"too_large","reason":"Three independent features.","evidence":[{"file":"README.md","line":1,"note":"scope"}]}`),
			claudetest.Text("Refused.")}},
		claudetest.Scenario{Name: "dev-done", Turns: []claudetest.Turn{
			refuse(`{"status":"already_done","reason":"The README exists.","evidence":[{"file":"README.md","line":1,"note":"title line"}]}`),
			claudetest.Text("Refused.")}},
		claudetest.Scenario{Name: "dev-unmet", Turns: []claudetest.Turn{
			refuse(`{"status":"unmet_dependency","reason":"Needs the API of #1.","dependency":1}`),
			claudetest.Text("Refused.")}},
	)
	b := e.newBot("dev-bot")
	api := e.issue("The API", "not ready yet")
	large := e.issue("Everything", "scenario: dev-too-large", forge.LabelBacklog)
	done := e.issue("A README", "scenario: dev-done", forge.LabelBacklog)
	unmet := e.issue("Use the API", "scenario: dev-unmet", forge.LabelBacklog)

	b.tickUntil("three refusals", 5, func() bool { return len(b.records()) == 3 })

	if i := e.getIssue(large); !i.HasLabel(forge.LabelUnderspecified) || i.HasLabel(forge.LabelBacklog) || i.HasLabel(forge.LabelInProgress) {
		t.Errorf("too_large: labels %v", i.Labels)
	}
	if !hasComment(t, e.repo, large, "Too large for single session") {
		t.Error("too_large: no comment")
	}
	if i := e.getIssue(done); i.State != forge.StateClosed || !hasComment(t, e.repo, done, "README.md:1") {
		t.Errorf("already_done: state %s", i.State)
	}
	i := e.getIssue(unmet)
	if !i.HasLabel(forge.LabelBacklog) || i.HasLabel(forge.LabelInProgress) || len(i.Assignees) != 0 || !hasComment(t, e.repo, unmet, "#1") {
		t.Errorf("unmet_dependency: %+v", i)
	}
	codes := map[ledger.Code]bool{}
	for _, r := range b.records() {
		codes[r.Code] = r.Reason == ledger.ReasonRefused
	}
	for _, c := range []ledger.Code{ledger.CodeRefusedTooLarge, ledger.CodeRefusedAlreadyDone, ledger.CodeRefusedUnmetDep} {
		if !codes[c] {
			t.Errorf("no refused record with %s: %+v", c, b.records())
		}
	}
	// The same refusal is not paid for twice while #1 is open.
	before := len(e.model.MessageRequests("dev-unmet"))
	b.tick()
	if len(e.model.MessageRequests("dev-unmet")) != before {
		t.Error("refused issue started again with the same text")
	}
	_ = api
}

func TestDevDependencies(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-deps", Turns: fixTurns(0)})
	b := e.newBot("dev-bot")
	dep := e.issue("First", "no backlog label")
	n := e.issue("Second", "scenario: dev-deps\n\n## Depends on\n- #1\n", forge.LabelBacklog)
	b.tick()
	if len(e.model.MessageRequests("")) != 0 || b.stage(n) != "" {
		t.Fatal("picked an issue whose dependency is open")
	}
	if err := e.repo.CloseIssue(testCtx(t), dep); err != nil {
		t.Fatal(err)
	}
	b.tick()
	if len(e.pullsFor("fix/issue-2")) != 1 {
		t.Fatal("not picked after the dependency closed")
	}
}
