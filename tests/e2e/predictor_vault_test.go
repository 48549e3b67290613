package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// TestSystemPredictorExploit (spec 40 §3.8.2, §3.8.3): on a project
// `disinto init` provisioned (vault bot, ops repository), an exploit of a
// factory formula files its prediction #P and, through the vault's
// requester, the ops pull request "vault: predict-<P>-run-gardener" from
// vault/predict-<P>-run-gardener, labelled vault and pending-approval,
// whose action file names the formula and no secrets; an exploit of a
// formula that does not exist makes no request, and the run records
// vault.invalid_formula.
func TestSystemPredictorExploit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	prop := func(title, formula string) map[string]any {
		return map[string]any{"kind": "exploit", "title": title, "observation": "Seen.", "theory": title + " theory",
			"confidence": "high", "evidence_checked": "evidence/", "suggested_action": "Run it.", "formula": formula, "focus": "the launch claim"}
	}
	proposals, _ := json.Marshal(map[string]any{"proposals": []map[string]any{
		prop("Nothing grooms the launch backlog", "run-gardener"), prop("A formula nobody wrote", "run-nonexistent")}})
	y := bootSystem(t, 2*time.Second, claudetest.Scenario{Name: "sys-exploit", Marker: "Find the weakest point", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$DISINTO_PREDICTOR_PROPOSALS\" <<'JSON'\n" + string(proposals) + "\nJSON")),
		claudetest.Text("done")}})
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	y.MustRun(t, y.daemonEnv, "run", "predictor", "--project", "widgets", "--once")
	ctx := testCtx(t)
	admin := y.srv.Admin(t)
	is, err := admin.Repo("acme", "widgets").ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err != nil || len(is) != 1 || is[0].Title != "Nothing grooms the launch backlog" {
		t.Fatalf("issues: %+v %v", is, err)
	}
	id := fmt.Sprintf("predict-%d-run-gardener", is[0].Number)
	opsRepo := admin.Repo("acme", "widgets-ops")
	ps, err := opsRepo.ListPulls(ctx, forge.StateOpen)
	if err != nil || len(ps) != 1 || ps[0].Title != "vault: "+id || ps[0].Head != "vault/"+id {
		t.Fatalf("ops pull requests: %+v %v", ps, err)
	}
	pi, err := opsRepo.GetIssue(ctx, ps[0].Number)
	if err != nil || !pi.HasLabel(forge.LabelVault) || !pi.HasLabel(forge.LabelPendingApproval) {
		t.Errorf("vault pull request labels: %+v %v", pi.Labels, err)
	}
	f, err := opsRepo.GetFile(ctx, "vault/actions/"+id+".toml", ps[0].HeadSHA)
	if err != nil || !strings.Contains(string(f.Content), `formula = "run-gardener"`) || !strings.Contains(string(f.Content), "secrets = []") {
		t.Fatalf("action file: %s %v", f.Content, err)
	}
	var runs []ledger.Record
	for _, r := range ledgerRecords(t, y.Data) {
		if r.Role == "predictor" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 1 || runs[0].Code != "vault.invalid_formula" || !strings.Contains(runs[0].Detail, fmt.Sprintf("vault pull request #%d", ps[0].Number)) {
		t.Fatalf("predictor ledger records: %+v", runs)
	}
}
