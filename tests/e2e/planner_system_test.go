package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// TestSystemPlannerOnce: on a project `disinto init` provisioned, the
// daemon schedules the planner (first run after its 12 h interval), and
// `disinto run planner --project widgets --once` runs it in the
// foreground: the plan's backlog issue is filed by the planner's
// identity, its triage closes the open prediction as actioned with the
// reasoning, and the tree lands on the ops primary branch, where the
// planner bot may commit its own files; `disinto
// status` shows the run, and a second run with nothing changed asks the
// model nothing.
func TestSystemPlannerOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	y := bootSystem(t, 2*time.Second)
	admin := y.srv.Admin(t).Repo("acme", "widgets")
	ctx := testCtx(t)
	pred, err := admin.CreateIssue(ctx, forge.NewIssue{Title: "Nothing measures the launch", Body: "Seen.\n\n---\n**Theory:** no metrics\n",
		Labels: []forge.LabelName{forge.LabelPredictionUnreviewed}})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := json.Marshal(map[string]any{
		"tree": map[string]any{"objectives": []map[string]any{{"name": "Launch", "status": "BLOCKED", "reason": "metrics",
			"prerequisites": []map[string]any{{"text": "Metrics wired", "done": false, "ref": "metrics"}}}}},
		"triage": []map[string]any{{"prediction": pred.Number, "decision": "action", "reasoning": "Agreed.", "follow_up": "metrics"}},
		"issues": []map[string]any{{"ref": "metrics", "kind": "backlog", "template": "feature", "title": "Wire the launch metrics",
			"problem": "Nothing measures the launch.", "proposed_solution": "Count visits.", "affected_files": []string{"cmd/metrics.go"},
			"acceptance_criteria": []string{"visits are counted"}}},
	})
	if err := y.model.SetScenarios(claudetest.Scenario{Name: "sys-planner", Marker: "Keep the prerequisite tree", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$DISINTO_PLANNER_PLAN\" <<'JSON'\n" + string(plan) + "\nJSON")),
		claudetest.Text("done")}}); err != nil {
		t.Fatal(err)
	}
	y.wantScheduledAfter(t, "planner", 11*time.Hour)
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	y.MustRun(t, y.daemonEnv, "run", "planner", "--project", "widgets", "--once")
	is, err := admin.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		t.Fatal(err)
	}
	var filed []forge.Issue
	for _, i := range is {
		if i.Number != pred.Number {
			filed = append(filed, i)
		}
	}
	if len(filed) != 1 || filed[0].Title != "Wire the launch metrics" || !filed[0].HasLabel(forge.LabelBacklog) {
		t.Fatalf("issues after the planner run: %+v", filed)
	}
	if want := config.DefaultBotUser(config.RolePlanner); !strings.EqualFold(filed[0].Author, want) {
		t.Errorf("the issue is authored by %s, not %s", filed[0].Author, want)
	}
	p, err := admin.GetIssue(ctx, pred.Number)
	if err != nil || p.State != forge.StateClosed || !p.HasLabel(forge.LabelPredictionActioned) || p.HasLabel(forge.LabelPredictionUnreviewed) {
		t.Errorf("prediction after triage: %+v %v", p, err)
	}
	// The planner bot may push to the ops primary branch: its own files
	// land there directly, in a commit naming the run, with no pull request.
	opsRepo := y.srv.Admin(t).Repo("acme", "widgets-ops")
	if ps, err := opsRepo.ListPulls(ctx, forge.StateOpen); err != nil || len(ps) != 0 {
		t.Errorf("ops pull requests: %+v %v", ps, err)
	}
	if f, err := opsRepo.GetFile(ctx, "prerequisites.md", "main"); err != nil ||
		!strings.Contains(string(f.Content), "- [ ] Metrics wired (#") {
		t.Errorf("tree on the ops primary branch: %s %v", f.Content, err)
	}
	var runs []ledger.Record
	for _, r := range ledgerRecords(t, y.Data) {
		if r.Role == "planner" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 1 || runs[0].Reason != ledger.ReasonPlanned || !strings.Contains(runs[0].Detail, "filed 1 of a budget of 4") {
		t.Fatalf("planner ledger records: %+v", runs)
	}
	out := y.MustRun(t, nil, "status")
	for _, want := range []string{"planner", "planned"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	asked := len(y.model.MessageRequests("sys-planner"))
	y.MustRun(t, y.daemonEnv, "run", "planner", "--project", "widgets", "--once")
	if got := len(y.model.MessageRequests("sys-planner")); got != asked {
		t.Errorf("an unchanged run asked the model %d times", got-asked)
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
}
