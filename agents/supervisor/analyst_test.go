package supervisor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
)

// An unknown anomaly (repeated run failures) is shown to the real claude
// CLI, bounded, with the run-supervisor formula; its JSON verdict is
// validated and folded into the incident, and nothing it proposes runs.
func TestUnknownAnomalyAsksTheModelOnce(t *testing.T) {
	r := newRig(t)
	fp := r.forgeProject()
	analysis := filepath.Join(r.o.StateDir, "analysis", "report.json")
	verdict := `{"summary": "dev runs fail with a rejected token", "findings": [{"priority": "P2", "finding": "forge token rejected", "evidence": "ledger", "proposed_action": "rotate FORGE_TOKEN", "needs_human": true}]}`
	srv, url := claudetest.Start(t, claudetest.Scenario{Name: "supervisor", Default: true, Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Write(analysis, verdict)),
		claudetest.Text("Report written."),
	}})
	e, err := claude.New(claude.Options{Bin: claudetest.RequireCLI(t),
		Backends: []claude.Backend{{Name: "scripted", BaseURL: url, APIKey: "sk-test-not-a-real-key", MaxSessions: 1}},
		BaseEnv:  claudetest.Env(t), IdleGrace: 30 * time.Second, Timeout: 3 * time.Minute, TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Load(formulas.FS, "run-supervisor")
	if err != nil {
		t.Fatal(err)
	}
	r.o.Analyst = &ModelAnalyst{Claude: e, Formula: f, Project: "p", Dir: filepath.Join(r.o.StateDir, "analysis")}
	r.o.LedgerDir = filepath.Join(r.data, "ledger")
	l, err := ledger.Open(r.o.LedgerDir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := r.clock.now()
	for i := range 3 {
		if err := l.Append(ledger.Record{Project: "p", Role: "dev", Issue: int64(i + 1), Start: now.Add(-time.Minute), End: now,
			Reason: ledger.ReasonEngineError, Code: ledger.CodeForgeUnauthorized, Detail: "401 from the forge"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	out := r.run(r.agent())
	if n := len(srv.Requests()); n == 0 {
		t.Fatal("the model was not asked")
	}
	got := findings(out, RuleRunFailures)
	if len(got) != 1 || got[0].Incident == 0 {
		t.Fatalf("findings = %+v, actions %+v", out.Findings, out.Actions)
	}
	is, err := fp.Repo.GetIssue(ctxT(t), got[0].Incident)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(is.Body, "dev runs fail with a rejected token") || !strings.Contains(is.Body, "proposed: rotate FORGE_TOKEN") {
		t.Fatalf("incident body:\n%s", is.Body)
	}
	if n := len(srv.MessageRequests("supervisor")); n > DefaultAnalystTurns {
		t.Fatalf("%d model requests, over the turn bound", n)
	}
}
