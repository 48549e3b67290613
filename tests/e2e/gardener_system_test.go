package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// TestSystemGardenerOnce: on a project `disinto init` provisioned, the
// daemon schedules the gardener (first run after its 6 h interval), and
// `disinto run gardener --project widgets --once` runs it in the
// foreground: tech debt the model calls ore is proposed in a gardener
// pull request, and `disinto status` shows the run, its outcome and the
// gardener's next run.
func TestSystemGardenerOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	proposals, _ := json.Marshal(map[string]any{"issues": []map[string]any{{"issue": 1, "kind": "ore", "reason": "behaviour",
		"acceptance_criteria": []string{"the loader reads the file once"}, "affected_files": []string{"README.md"}}}})
	y := bootSystem(t, 2*time.Second, claudetest.Scenario{Name: "sys-gardener", Marker: "Judge the issues", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$DISINTO_GARDENER_PROPOSALS\" <<'JSON'\n" + string(proposals) + "\nJSON")),
		claudetest.Text("done")}})
	admin := y.srv.Admin(t).Repo("acme", "widgets")
	ctx := testCtx(t)
	iss, err := admin.CreateIssue(ctx, forge.NewIssue{Title: "the loader is slow", Body: "The loader in README.md is re-read on every call.",
		Labels: []forge.LabelName{forge.LabelTechDebt}})
	if err != nil || iss.Number != 1 {
		t.Fatalf("issue: %+v %v", iss, err)
	}
	y.wantScheduledAfter(t, "gardener", 5*time.Hour)
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	y.MustRun(t, y.daemonEnv, "run", "gardener", "--project", "widgets", "--once")
	ps, err := admin.ListPulls(ctx, forge.StateOpen)
	if err != nil || len(ps) != 1 || !strings.HasPrefix(ps[0].Head, "chore/gardener-") || ps[0].Title != "chore: gardener housekeeping" {
		t.Fatalf("pull requests after the gardener run: %+v %v", ps, err)
	}
	f, err := admin.GetFile(ctx, "gardener/pending-actions.json", ps[0].HeadSHA)
	if err != nil || !strings.Contains(string(f.Content), `"action":"add_label","issue":1,"label":"backlog"`) {
		t.Fatalf("manifest: %s %v", f.Content, err)
	}
	var gardener []ledger.Record
	for _, r := range ledgerRecords(t, y.Data) {
		if r.Role == "gardener" {
			gardener = append(gardener, r)
		}
	}
	if len(gardener) != 1 || gardener[0].Reason != ledger.ReasonGroomed || gardener[0].PR != ps[0].Number {
		t.Fatalf("gardener ledger records: %+v", gardener)
	}
	out := y.MustRun(t, nil, "status")
	for _, want := range []string{"gardener", "groomed"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	// A second one-shot run: the pull request waits for its review, so
	// nothing new is proposed.
	y.MustRun(t, y.daemonEnv, "run", "gardener", "--project", "widgets", "--once")
	if ps, _ := admin.ListPulls(ctx, forge.StateOpen); len(ps) != 1 {
		t.Errorf("%d open pull requests after a second run", len(ps))
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
}
