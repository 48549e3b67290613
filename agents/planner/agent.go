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
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
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
	Me(ctx context.Context) (forge.User, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// Graph is the structural analysis of the project shown to the session
// (orphans, cycles, thin objectives, bottlenecks).
type Graph interface {
	// Context returns the analysis as text, "" when there is none.
	Context(ctx context.Context) (string, error)
}

// Options configures an Agent.
type Options struct {
	Project string
	Primary string
	// Forge acts as the planner bot on the project's repository; Runner
	// checks out the primary branch and runs the session.
	Forge  forgeAPI
	Runner *formulaagent.Runner
	// Formula is the planner formula; LiveFormula, when set, returns the
	// formula in force now (overrides).
	Formula     *formula.Formula
	LiveFormula func() *formula.Formula
	Lessons     func(context.Context) string
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
	Graph Graph
	// StateDir holds the lock, the watermark and the run counter.
	StateDir string
	Redactor *redact.Redactor
	Now      func() time.Time
	Log      zerolog.Logger
}

// Agent is the planner of one project.
type Agent struct {
	o     Options
	watch formulaagent.Watch
	state stateFile
	self  forge.Self
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the planner of o.Project.
func New(o Options) *Agent {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.OpsPrimary == "" {
		o.OpsPrimary = "main"
	}
	return &Agent{o: o,
		watch: formulaagent.Watch{Forge: o.Forge, Primary: o.Primary, File: filepath.Join(o.StateDir, "watch.json")},
		state: stateFile{path: filepath.Join(o.StateDir, "state.json")}}
}

func (a *Agent) formula() *formula.Formula { return formula.InForce(a.o.LiveFormula, a.o.Formula) }

func (a *Agent) treePath() string { return cmpOr(a.o.TreePath, graph.DefaultTreePath) }

// identity returns the planner bot's login.
func (a *Agent) identity(ctx context.Context) (string, error) { return a.self.Login(ctx, a.o.Forge.Me) }

// Tick is one planner run: under the project's lock, skip when nothing it
// reads changed since the last run (its own changes excluded) and no
// prediction waits for triage; otherwise run the session and apply the
// plan.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	unlock, err := formulaagent.Lock(a.o.StateDir)
	if errors.Is(err, formulaagent.ErrBusy) {
		log := run.Logger()
		log.Info().Str("reason", err.Error()).Msg("planner run skipped")
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
	st, err := a.state.load()
	if err != nil {
		return err
	}
	opsHead, err := a.opsHead(ctx)
	if err != nil {
		return err
	}
	why := obs.Why
	switch {
	case why != "":
	case opsHead != st.OpsHead:
		why = "ops repository moved"
	case len(st.Untriaged) > 0:
		why = "predictions wait for triage"
	default:
		log := run.Logger()
		log.Debug().Msg("nothing changed since the last planner run")
		return nil
	}
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	log := run.Logger().With().Str("why", why).Logger()
	res, runErr := a.run(ctx, run.ID, st.Runs+1, me, st.PRs, log)
	if res == nil {
		return runErr
	}
	st = state{Runs: st.Runs + 1, OpsHead: res.ops.Head, Untriaged: res.untriaged, PRs: res.pending, Run: a.o.Now()}
	if res.ops.Head == "" {
		st.OpsHead = opsHead
	}
	if err := a.state.save(st); err != nil {
		return err
	}
	if runErr != nil {
		// What was done stays done; the watermark stays where it was, so
		// the next run looks again (and finds what it filed by title).
		return runErr
	}
	if err := a.settle(ctx, obs, me, res, log); err != nil {
		return err
	}
	return run.Record(res.record())
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
