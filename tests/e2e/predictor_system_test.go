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

// TestSystemPredictorOnce: on a project `disinto init` provisioned, the
// daemon schedules the predictor (first run after its 24 h interval), and
// `disinto run predictor --project widgets --once` runs it in the
// foreground: the model's one explore is filed as a prediction/unreviewed
// issue by the predictor's identity, `disinto status` shows the run; a
// second run looks again and files no duplicate, and a third, with
// nothing changed, asks the model nothing.
func TestSystemPredictorOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	proposals, _ := json.Marshal(map[string]any{"proposals": []map[string]any{{"kind": "explore",
		"title": "Nothing proves the widgets launch", "observation": "The tree claims launch; no evidence exists.",
		"theory": "the launch objective is done on paper only", "confidence": "medium",
		"evidence_checked": "evidence/ in the ops repository", "suggested_action": "Ask for a red-team run."}}})
	y := bootSystem(t, 2*time.Second, claudetest.Scenario{Name: "sys-predictor", Marker: "Find the weakest point", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$DISINTO_PREDICTOR_PROPOSALS\" <<'JSON'\n" + string(proposals) + "\nJSON")),
		claudetest.Text("done")}})
	admin := y.srv.Admin(t).Repo("acme", "widgets")
	ctx := testCtx(t)
	y.wantScheduledAfter(t, "predictor", 23*time.Hour)
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	y.MustRun(t, y.daemonEnv, "run", "predictor", "--project", "widgets", "--once")
	predictions := func() []forge.Issue {
		t.Helper()
		is, err := admin.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	is := predictions()
	if len(is) != 1 || !is[0].HasLabel(forge.LabelPredictionUnreviewed) || len(is[0].Labels) != 1 ||
		!strings.Contains(is[0].Body, "\n---\n**Theory:** the launch objective is done on paper only\n**Confidence:** medium\n") {
		t.Fatalf("issues after the predictor run: %+v", is)
	}
	if want := config.DefaultBotUser(config.RolePredictor); !strings.EqualFold(is[0].Author, want) {
		t.Errorf("the prediction is authored by %s, not %s", is[0].Author, want)
	}
	var runs []ledger.Record
	for _, r := range ledgerRecords(t, y.Data) {
		if r.Role == "predictor" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 1 || runs[0].Reason != ledger.ReasonPlanned || !strings.Contains(runs[0].Detail, "1 predictions filed") {
		t.Fatalf("predictor ledger records: %+v", runs)
	}
	out := y.MustRun(t, nil, "status")
	for _, want := range []string{"predictor", "planned"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	asked := len(y.model.MessageRequests("sys-predictor"))
	y.MustRun(t, y.daemonEnv, "run", "predictor", "--project", "widgets", "--once")
	if n := len(predictions()); n != 1 {
		t.Errorf("%d issues after a second run", n)
	}
	if len(y.model.MessageRequests("sys-predictor")) == asked {
		t.Error("the run after a filing run did not look again")
	}
	asked = len(y.model.MessageRequests("sys-predictor"))
	y.MustRun(t, y.daemonEnv, "run", "predictor", "--project", "widgets", "--once")
	if got := len(y.model.MessageRequests("sys-predictor")); got != asked {
		t.Errorf("an unchanged run asked the model %d times", got-asked)
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
}
