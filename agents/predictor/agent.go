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
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/redact"
)

// FormulaName is the predictor's formula (formulas/run-predictor.toml).
const FormulaName = "run-predictor"

const role = "predictor"

// forgeAPI is what the predictor does on the forge, as its bot.
type forgeAPI interface {
	fileForge
	formulaagent.WatchForge
	provenance.Forge
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// Options configures an Agent.
type Options struct {
	Project string
	Primary string
	// Forge acts as the predictor bot; Driver is the role's runtime: its
	// tick, formula and session, and its state dir, which holds the last
	// run's filings besides the lock and the watermark.
	Forge  forgeAPI
	Driver *formulaagent.Driver
	// Formulas are the factory's formula names an exploit may run (the
	// formulas the vault's runner executes).
	Formulas []string
	// Ops is the ops repository (nil: none; the session is told so).
	Ops Ops
	// Vault files the vault requests of exploits (nil: an exploit files
	// its prediction and the run records that no request was made).
	Vault Vault
	// Graph is the structural analysis (nil: none yet).
	Graph    formulaagent.Graph
	Redactor *redact.Redactor
	Log      zerolog.Logger
}

// Agent is the predictor of one project.
type Agent struct {
	o    Options
	now  func() time.Time
	last lastFile
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the predictor of o.Project.
func New(o Options) *Agent {
	if o.Primary == "" {
		o.Primary = "main"
	}
	return &Agent{o: o, now: o.Driver.Now, last: lastFile{path: o.Driver.StatePath("last.json")}}
}

// Tick is one predictor run (formulaagent.Driver.Tick): skip when
// nothing it reads changed (primary head, issues, ops head) and the
// previous run filed nothing; otherwise run the session and file what
// passes.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error { return a.o.Driver.Tick(ctx, run, a) }

// Begin implements formulaagent.Role: besides the primary branch and the
// issues, the predictor watches the ops repository, and a run that filed
// predictions makes the next one look again.
func (a *Agent) Begin(ctx context.Context, r *formulaagent.Run) (formulaagent.Body, string, error) {
	prev, err := a.last.load()
	if err != nil {
		return nil, "", err
	}
	ops, opsHead := a.ops(ctx, r.Logger())
	why := r.Obs.Why
	if why == "" && opsHead != prev.OpsHead {
		why = "ops repository moved"
	}
	if why == "" && len(prev.Filed) == 0 {
		return nil, "", nil
	}
	if why == "" {
		why = "the last run filed predictions"
	}
	return func(ctx context.Context, r *formulaagent.Run) (formulaagent.Outcome, error) {
		res, err := a.run(ctx, r.Me, ops, r.Log)
		if err != nil {
			return formulaagent.Outcome{}, err
		}
		if err := a.last.save(last{OpsHead: opsHead, Filed: res.issues(), Run: a.now()}); err != nil {
			return formulaagent.Outcome{}, err
		}
		return formulaagent.Outcome{Record: res.record}, nil
	}, why, nil
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
