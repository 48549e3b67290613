// Package predictor is the abstract adversary of a project (spec 40 §3):
// it looks for the project's weakest point, challenges the plan's claims
// on thin evidence, and proposes predictions for the planner to triage
// (explore) or predictions with a formula run to test them (exploit).
//
// A run asks one bounded session for judgement only: the session reads a
// copy of the primary branch, the ops repository's tree and resources,
// the evidence inventory and its own track record, and writes typed
// proposals to its outbox. The orchestrator enforces what the reference
// left to the prompt: the five-point budget (an exploit costs two), no
// duplicate of an open prediction, no dismissed theory without new
// evidence naming the dismissed issue, formulas that exist. It files
// what passes as the predictor bot, labelled prediction/unreviewed, makes
// the vault requests of exploits, and never files work items.
package predictor

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/redact"
)

// FormulaName is the predictor's formula (formulas/run-predictor.toml).
const FormulaName = "run-predictor"

const role = "predictor"

// forgeAPI is what the predictor does on the forge, as its bot.
type forgeAPI interface {
	fileForge
	formulaagent.WatchForge
	Me(ctx context.Context) (forge.User, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// Options configures an Agent.
type Options struct {
	Project string
	Primary string
	// Forge acts as the predictor bot; Runner checks out the primary
	// branch and runs the session.
	Forge  forgeAPI
	Runner *formulaagent.Runner
	// Formula is the predictor formula; LiveFormula, when set, returns
	// the formula in force now (overrides).
	Formula     *formula.Formula
	LiveFormula func() *formula.Formula
	Lessons     func(context.Context) string
	// Formulas are the factory's formula names an exploit may run (the
	// formulas the vault's runner executes).
	Formulas []string
	// Ops is the ops repository (nil: none; the session is told so).
	Ops Ops
	// Vault files the vault requests of exploits (nil: an exploit files
	// its prediction and the run records that no request was made).
	Vault Vault
	// Graph is the structural analysis (nil: none yet).
	Graph Graph
	// StateDir holds the lock, the watermark and the last run's filings.
	StateDir string
	Redactor *redact.Redactor
	Now      func() time.Time
	Log      zerolog.Logger
}

// Agent is the predictor of one project.
type Agent struct {
	o     Options
	watch formulaagent.Watch
	last  lastFile
	self  forge.Self
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the predictor of o.Project.
func New(o Options) *Agent {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	return &Agent{o: o,
		watch: formulaagent.Watch{Forge: o.Forge, Primary: o.Primary, File: filepath.Join(o.StateDir, "watch.json")},
		last:  lastFile{path: filepath.Join(o.StateDir, "last.json")}}
}

func (a *Agent) formula() *formula.Formula { return formula.InForce(a.o.LiveFormula, a.o.Formula) }

// identity returns the predictor bot's login.
func (a *Agent) identity(ctx context.Context) (string, error) { return a.self.Login(ctx, a.o.Forge.Me) }

// Tick is one predictor run: under the project's lock, skip when nothing
// it reads changed (primary head, issues, ops head) and the previous run
// filed nothing; otherwise run the session and file what passes.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	unlock, err := formulaagent.Lock(a.o.StateDir)
	if errors.Is(err, formulaagent.ErrBusy) {
		log := run.Logger()
		log.Info().Str("reason", err.Error()).Msg("predictor run skipped")
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	obs, err := a.watch.Changed(ctx, a.o.Now())
	if err != nil {
		return err
	}
	prev, err := a.last.load()
	if err != nil {
		return err
	}
	ops, opsHead := a.ops(ctx, run.Logger())
	why := obs.Why
	if why == "" && opsHead != prev.OpsHead {
		why = "ops repository moved"
	}
	if why == "" && len(prev.Filed) == 0 {
		log := run.Logger()
		log.Debug().Msg("nothing changed since the last predictor run, which filed nothing")
		return nil
	}
	if why == "" {
		why = "the last run filed predictions"
	}
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	log := run.Logger().With().Str("why", why).Logger()
	res, err := a.run(ctx, me, ops, log)
	if err != nil {
		return err
	}
	if err := a.last.save(last{OpsHead: opsHead, Filed: res.issues(), Run: a.o.Now()}); err != nil {
		return err
	}
	if err := a.watch.Save(obs, time.Time{}); err != nil {
		return err
	}
	return run.Record(res.record())
}

// ops returns the ops repository's files and head; a failure to read it
// costs the session that context, not the run.
func (a *Agent) ops(ctx context.Context, log zerolog.Logger) (*OpsTree, string) {
	if a.o.Ops == nil {
		return nil, ""
	}
	t, head, err := a.o.Ops.Snapshot(ctx)
	if err != nil {
		log.Warn().Str("error", a.o.Redactor.String(err.Error())).Msg("ops repository unreadable; the run goes without it")
		return nil, ""
	}
	return &t, head
}

// Report implements agent.Reporter: the predictions the last run filed,
// awaiting the planner.
func (a *Agent) Report() agent.Report {
	l, err := a.last.load()
	if err != nil || len(l.Filed) == 0 {
		return agent.Report{}
	}
	var items []agent.Item
	for _, n := range l.Filed {
		items = append(items, agent.Item{Project: a.o.Project, Role: role, Issue: n,
			Stage: "prediction awaiting the planner", Started: l.Run})
	}
	return agent.Report{Items: items}
}

// last is what the previous run left: the ops head it read and the
// predictions it filed.
type last struct {
	OpsHead string    `json:"ops_head,omitempty"`
	Filed   []int64   `json:"filed,omitempty"`
	Run     time.Time `json:"run"`
}

// lastFile keeps last between runs.
type lastFile struct{ path string }

func (f lastFile) load() (last, error) {
	l, _, err := atomicfile.ReadState[last](f.path)
	return l, err
}

func (f lastFile) save(l last) error { return atomicfile.WriteState(f.path, l) }
