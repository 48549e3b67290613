// Package planner is the planner of a project (spec 40 §2): it keeps the
// prerequisite tree of the project's vision in the ops repository, turns
// the tree's current constraints into a few issues, answers every open
// prediction of the predictor, and keeps a memory of its runs.
//
// A run asks one bounded session for judgement only: the session reads a
// copy of the primary branch, the ops repository's tree, resources and
// memory, the tracker as the orchestrator listed it and the structural
// analysis, and writes a typed plan to its outbox. The orchestrator
// enforces what the reference left to the prompt. It files the plan's
// issues as the planner bot within a budget that never falls as more is
// triaged, max(4, triaged+1), follow-ups of actioned predictions first,
// no duplicate of an open issue; it triages with a reasoning comment and
// labels added and removed one at a time (an issue keeps every label the
// planner does not own, in-progress above all); it moves the priority
// label to the current top constraints. It commits the tree and the
// memory directly to the ops repository through lib/ops, the commit
// message naming the run, and only procurement requests, which ask a
// human, wait in a pull request for the vault's approvers.
//
// A run is skipped when nothing it reads changed: the primary branch,
// the issues (the planner's own updates excluded), the ops repository
// (its own commits excluded) and no prediction left untriaged.
package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/redact"
)

// FormulaName is the planner's formula (formulas/run-planner.toml).
const FormulaName = "run-planner"

const role = "planner"

// forgeAPI is what the planner does on the project's tracker, as its
// bot.
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
	// Forge acts as the planner bot on the project's repository; Driver
	// is the role's runtime: its tick, formula and session, and its state
	// dir, which holds the run counter besides the lock and the
	// watermark.
	Forge  forgeAPI
	Driver *formulaagent.Driver
	// Ops is the planner bot's own checkout of the ops repository, and
	// OpsForge the ops repository on the forge as the same bot; OpsPrimary
	// its primary branch (default "main"). Without Ops the run keeps no
	// tree and no memory, and says so.
	Ops        *ops.Repo
	OpsForge   OpsForge
	OpsPrimary string
	// TreePath is the tree in the ops repository, the graph's location
	// (default graph.DefaultTreePath).
	TreePath string
	// Graph is the structural analysis (nil: none).
	Graph    formulaagent.Graph
	Redactor *redact.Redactor
	Log      zerolog.Logger
}

// Agent is the planner of one project.
type Agent struct {
	o     Options
	now   func() time.Time
	state stateFile
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the planner of o.Project.
func New(o Options) *Agent {
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.OpsPrimary == "" {
		o.OpsPrimary = "main"
	}
	return &Agent{o: o, now: o.Driver.Now, state: stateFile{path: o.Driver.StatePath("state.json")}}
}

func (a *Agent) treePath() string { return cmpOr(a.o.TreePath, graph.DefaultTreePath) }

// Tick is one planner run (formulaagent.Driver.Tick): skip when nothing
// it reads changed since the last run (its own changes excluded) and no
// prediction waits for triage; otherwise run the session and apply the
// plan.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error { return a.o.Driver.Tick(ctx, run, a) }

// Begin implements formulaagent.Role: besides the primary branch and the
// issues, the planner watches the ops repository and the predictions it
// left untriaged.
func (a *Agent) Begin(ctx context.Context, r *formulaagent.Run) (formulaagent.Body, string, error) {
	st, err := a.state.load()
	if err != nil {
		return nil, "", err
	}
	opsHead, err := a.opsHead(ctx)
	if err != nil {
		return nil, "", err
	}
	why := r.Obs.Why
	switch {
	case why != "":
	case opsHead != st.OpsHead:
		why = "ops repository moved"
	case len(st.Untriaged) > 0:
		why = "predictions wait for triage"
	default:
		return nil, "", nil
	}
	return func(ctx context.Context, r *formulaagent.Run) (formulaagent.Outcome, error) {
		return a.body(ctx, r, st, opsHead)
	}, why, nil
}

// body is a run that goes ahead, from the state st the last run left.
func (a *Agent) body(ctx context.Context, r *formulaagent.Run, st state, opsHead string) (formulaagent.Outcome, error) {
	res, runErr := a.run(ctx, r.ID, st.Runs+1, r.Me, st.PRs, r.Log)
	if res == nil {
		return formulaagent.Outcome{}, runErr
	}
	st = state{Runs: st.Runs + 1, OpsHead: res.ops.Head, Untriaged: res.untriaged, PRs: res.pending, Run: a.now()}
	if res.ops.Head == "" {
		st.OpsHead = opsHead
	}
	if err := a.state.save(st); err != nil {
		return formulaagent.Outcome{}, err
	}
	if runErr != nil {
		// What was done stays done; the watermark stays where it was, so
		// the next run looks again (and finds what it filed by title).
		return formulaagent.Outcome{}, runErr
	}
	settle := func(ctx context.Context) error { return a.settle(ctx, r.Obs, r.Me, res, r.Log) }
	return formulaagent.Outcome{Record: res.record, Settle: settle}, nil
}

// opsHead is the ops primary branch's head on the forge ("" without an
// ops repository, or while it is empty): one request.
func (a *Agent) opsHead(ctx context.Context) (string, error) {
	if a.o.Ops == nil || a.o.OpsForge == nil {
		return "", nil
	}
	b, err := a.o.OpsForge.GetBranch(ctx, a.o.OpsPrimary)
	if errors.Is(err, forge.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("planner: ops primary branch: %w", err)
	}
	return b.SHA, nil
}

// Report implements agent.Reporter: the planner's ops pull requests
// still open when the last run looked, awaiting the approvers.
func (a *Agent) Report() agent.Report {
	st, err := a.state.load()
	if err != nil {
		return agent.Report{}
	}
	var items []agent.Item
	for _, p := range st.PRs {
		stage := "procurement requests awaiting approval (ops repository)"
		if p.Tree {
			stage = "prerequisite tree awaiting merge (ops repository)"
		}
		items = append(items, agent.Item{Project: a.o.Project, Role: role, PR: p.Number, Stage: stage, Started: st.Run})
	}
	return agent.Report{Items: items}
}

// state is what the runs keep between them: the run counter that drives
// the memory, the ops head the last run left (its own commit, so that it
// is not news), the predictions it left untriaged and the ops pull
// requests still open.
type state struct {
	Runs      int         `json:"runs"`
	OpsHead   string      `json:"ops_head,omitempty"`
	Untriaged []int64     `json:"untriaged,omitempty"`
	PRs       []pendingPR `json:"prs,omitempty"`
	Run       time.Time   `json:"run"`
}

// stateFile keeps state between runs.
type stateFile struct{ path string }

func (f stateFile) load() (state, error) {
	// A torn file costs one run, not a stuck role; the memory's marker
	// keeps the summary cadence.
	s, _, err := atomicfile.ReadState[state](f.path)
	return s, err
}

func (f stateFile) save(s state) error { return atomicfile.WriteState(f.path, s) }

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
