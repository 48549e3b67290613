package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/phase"
)

const bot = "dev-bot"

// model is what a scripted session does.
type model func(h *harness, n int, inv claude.Invocation) (claude.Result, error)

type harness struct {
	t    *testing.T
	f    *world
	g    *fakeGit
	v    *fakeVault
	r    *claudetest.Scripted
	led  *ledgertest.Memory
	rt   *agent.Runtime
	a    *Agent
	data string
	mu   sync.Mutex
	now  time.Time
	opts func(*Options)
}

func newHarness(t *testing.T, m model, opts ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, led: &ledgertest.Memory{}, data: t.TempDir(), now: time.Unix(1_700_000_000, 0)}
	h.f = newWorld(t, h.clock)
	h.g = newFakeGit(h.f.bot)
	h.v = &fakeVault{}
	h.r = &claudetest.Scripted{Script: func(ctx context.Context, n int, inv claude.Invocation) (claude.Result, error) {
		if m == nil {
			return okResult(), nil
		}
		return m(h, n, inv)
	}}
	h.rt = agent.New(agent.Options{Ledger: h.led, Log: zerolog.New(moveWatch{h.t, machine()}), Now: h.clock})
	h.opts = func(o *Options) {
		for _, f := range opts {
			f(o)
		}
	}
	h.a = h.newAgent()
	return h
}

// newAgent builds an agent over the same data dir (a restarted daemon).
func (h *harness) newAgent() *Agent {
	h.t.Helper()
	f, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		h.t.Fatalf("load dev formula: %v", err)
	}
	o := Options{Project: "proj", Repo: "owner/proj", PrimaryBranch: "main", CISystem: config.CIStatuses,
		Forge: h.f.bot, Claude: h.r, Git: h.g, Formula: f, DataDir: h.data, Now: h.clock,
		Mirrors: map[string]string{"github": "https://github.com/owner/proj.git"}, MirrorVault: h.v, Secrets: []string{"s3cr3t-value"},
		Maintainers: []string{"alice"}, ReviewBot: "review-bot", Log: zerolog.New(moveWatch{h.t, machine()})}
	h.opts(&o)
	a, err := New(o)
	if err != nil {
		h.t.Fatalf("new agent: %v", err)
	}
	return a
}

// moveWatch reads the agent's log: every line of the agent (the sandbox
// it makes has a logger of its own) must carry the run it
// belongs to, every move it logs must be in the transition table, and a
// move the table refused fails the test even when it happened in
// background work, whose errors are only logged.
type moveWatch struct {
	t *testing.T
	m map[Stage]stageDef
}

func (w moveWatch) Write(p []byte) (int, error) {
	var l struct {
		Msg   string `json:"message"`
		Agent string `json:"agent"`
		Run   string `json:"run"`
		From  Stage  `json:"phase"`
		To    Stage  `json:"to"`
	}
	if err := json.Unmarshal(p, &l); err != nil || (l.Agent != "" && l.Run == "") {
		w.t.Errorf("agent's log line without a run: %s", p)
	}
	if l.Msg == "stage" && !allows(w.m, l.From, l.To) {
		w.t.Errorf("move %q to %q is not in the transition table", l.From, l.To)
	}
	if bytes.Contains(p, []byte(errTransition.Error())) {
		w.t.Errorf("a move was refused: %s", p)
	}
	return len(p), nil
}

// direct is a run for calling one step outside a tick: work runs inline
// and records go to the harness's ledger.
type direct struct{ led *ledgertest.Memory }

func (direct) Go(ctx context.Context, _ string, fn func(context.Context)) bool { fn(ctx); return true }
func (direct) Busy(string) bool                                                { return false }
func (direct) Logger() zerolog.Logger                                          { return zerolog.Nop() }
func (d direct) Record(rec ledger.Record) error                                { return d.led.Append(rec) }

// followup renders a follow-up that takes no values.
func (h *harness) followup(name string) string {
	h.t.Helper()
	p, err := h.a.followup(name, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advanceClock(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// tick runs one tick through the runtime and waits for the sessions it
// started.
func (h *harness) tick() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.rt.Tick(ctx, h.a, &config.Project{Name: "proj"}, config.RoleDev, agent.CauseManual); err != nil {
		h.t.Fatalf("tick: %v", err)
	}
	if err := h.rt.Wait(ctx); err != nil {
		h.t.Fatalf("wait: %v", err)
	}
}

// tickErr runs one tick like tick but returns its error.
func (h *harness) tickErr() error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := h.rt.Tick(ctx, h.a, &config.Project{Name: "proj"}, config.RoleDev, agent.CauseManual)
	if werr := h.rt.Wait(ctx); werr != nil {
		h.t.Fatalf("wait: %v", werr)
	}
	return err
}

func (h *harness) state(n int64) (State, bool) {
	h.t.Helper()
	st, ok, err := h.a.State(n)
	if err != nil {
		h.t.Fatal(err)
	}
	return st, ok
}

func (h *harness) wantStage(n int64, want Stage) State {
	h.t.Helper()
	st, ok := h.state(n)
	if !ok || st.Stage != want {
		h.t.Fatalf("issue #%d: stage %q (exists %v), want %q", n, st.Stage, ok, want)
	}
	return st
}

func (h *harness) wantLedger(reason ledger.Reason, code ledger.Code) ledger.Record {
	h.t.Helper()
	recs := h.led.Records()
	if len(recs) != 1 {
		h.t.Fatalf("ledger has %d records, want 1: %+v", len(recs), recs)
	}
	if recs[0].Reason != reason || recs[0].Code != code {
		h.t.Fatalf("ledger %s/%s, want %s/%s", recs[0].Reason, recs[0].Code, reason, code)
	}
	return recs[0]
}

func (h *harness) wantComment(n int64, sub string) {
	h.t.Helper()
	for _, c := range h.f.commentsOf(n) {
		if strings.Contains(c.Body, sub) {
			return
		}
	}
	h.t.Fatalf("issue #%d: no comment contains %q", n, sub)
}

func (h *harness) wantLabels(n int64, want ...forge.LabelName) {
	h.t.Helper()
	got := h.f.issue(n).Labels
	if len(got) != len(want) {
		h.t.Fatalf("issue #%d labels %v, want %v", n, got, want)
	}
	for _, w := range want {
		if !h.f.issue(n).HasLabel(w) {
			h.t.Fatalf("issue #%d labels %v, want %v", n, got, want)
		}
	}
}

func okResult() claude.Result {
	return claude.Result{SessionID: "sess-1", Subtype: "success", HasResult: true, CostUSD: 0.25,
		Usage: claude.Usage{InputTokens: 100, OutputTokens: 20}, NumTurns: 3, Text: "Changed the widget."}
}

// implement is a model that commits and writes phase p; the agent pushes.
func (h *harness) implement(inv claude.Invocation, p phase.Phase) (claude.Result, error) {
	h.g.commit(inv.Dir)
	return h.writePhase(inv, p, "")
}

func (h *harness) writePhase(inv claude.Invocation, p phase.Phase, reason string) (claude.Result, error) {
	if err := phase.Write(inv.Env[formula.EnvPhaseFile], p, reason); err != nil {
		h.t.Error(err)
	}
	return okResult(), nil
}

func (h *harness) writeResult(inv claude.Invocation, json string) (claude.Result, error) {
	if err := os.WriteFile(inv.Env[formula.EnvResultFile], []byte(json), 0o600); err != nil {
		h.t.Error(err)
	}
	return okResult(), nil
}

// pushing always implements and asks for CI.
func pushing(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
	return h.implement(inv, phase.AwaitingCI)
}
