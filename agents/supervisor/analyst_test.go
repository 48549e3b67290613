package supervisor

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/rs/zerolog"
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

// promptRunner is a model runner that keeps the prompts it is given and
// writes a valid report where the prompt's report file variable says.
type promptRunner struct {
	report  string
	prompts []string
}

func (p *promptRunner) Run(_ context.Context, inv claude.Invocation) (claude.Result, error) {
	p.prompts = append(p.prompts, inv.Prompt)
	err := os.WriteFile(p.report, []byte(`{"summary": "ok", "findings": []}`), 0o600)
	return claude.Result{HasResult: true, Subtype: "success"}, err
}

// An override of run-supervisor landing in the ops checkout after the
// daemon started reaches the analyst's next prompt, with no resync of
// the daemon's in between: the formula is resolved at each analysis.
func TestAnalystUsesTheLiveFormula(t *testing.T) {
	ctx := t.Context()
	opsDir := t.TempDir()
	head := "ops1"
	live, err := formula.NewLive(ctx, formula.LiveOptions{Name: "run-supervisor", Embedded: formulas.FS, Logger: zerolog.Nop(),
		Ops: func(context.Context) (*formula.Tree, string, error) { return formula.DirTree(opsDir), head, nil }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runner := &promptRunner{report: filepath.Join(dir, "report.json")}
	m := &ModelAnalyst{Claude: runner, Formula: live.Formula(), Live: live, Project: "p", Dir: dir}
	analyse := func() string {
		t.Helper()
		if _, err := m.Analyse(ctx, &Snapshot{}, Finding{Rule: RuleRunFailures, Summary: "runs fail"}); err != nil {
			t.Fatal(err)
		}
		return runner.prompts[len(runner.prompts)-1]
	}
	const marker = "Classify what the snapshot shows, as the operator asks"
	if p := analyse(); strings.Contains(p, marker) {
		t.Fatal("the override is in the prompt before it landed")
	}
	shipped, err := fs.ReadFile(formulas.FS, "run-supervisor.toml")
	if err != nil {
		t.Fatal(err)
	}
	override := strings.Replace(string(shipped), `title = "Classify what the snapshot shows"`, `title = "`+marker+`"`, 1)
	if err := os.MkdirAll(filepath.Join(opsDir, "formulas"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(opsDir, "formulas", "run-supervisor.toml"), []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	head = "ops2"
	if p := analyse(); !strings.Contains(p, marker) {
		t.Fatalf("the ops override did not reach the analyst's prompt:\n%s", p)
	}
}
