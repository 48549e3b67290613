// Package supervisor is the supervisor agent: a deterministic control loop
// over the host, the containers and the factory (spec 60 §6). Each run
// collects a typed snapshot, evaluates the rule table, remediates with
// idempotent, bounded and logged actions under per-finding cooldowns,
// escalates what persists or cannot be fixed to one incident issue per
// fingerprint, and journals the run to the ops repository. A model is
// asked only about anomalies no rule explains, read-only, and code decides
// what to do with its JSON verdict; a run in which no rule fires makes no
// model request.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/dockerx"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ops"
)

// forgeAPI is what the supervisor needs of the project repository, as the
// supervisor bot. *forge.RepoClient implements it.
type forgeAPI interface {
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error)
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	EditIssue(ctx context.Context, n int64, e forge.IssueEdit) (forge.Issue, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	CloseIssue(ctx context.Context, n int64) error
	// Me is the supervisor bot: only its issues are incidents.
	Me(ctx context.Context) (forge.User, error)
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// engineAPI is what the supervisor needs of the Docker engine.
// *dockerx.Engine implements it.
type engineAPI interface {
	Containers(ctx context.Context, project string, names []string) ([]dockerx.Container, error)
	Volumes(ctx context.Context, project string) ([]dockerx.Volume, error)
	DataRoot(ctx context.Context) (string, error)
	Start(ctx context.Context, id string) error
	PruneDangling(ctx context.Context, labels ...string) (uint64, error)
	PruneBuildCache(ctx context.Context, labels ...string) (uint64, error)
}

var _ engineAPI = (*dockerx.Engine)(nil)

// Journal commits to the ops repository. *ops.Repo implements it.
type Journal interface {
	Commit(ctx context.Context, message string, edit ops.Edit) (string, error)
}

var _ Journal = (*ops.Repo)(nil)

// Pauser stops and resumes new agent runs of the project while memory is
// short. PauseNewRuns returns what it paused, so that ResumeNewRuns lifts
// exactly that and never a pause a human made.
type Pauser interface {
	PauseNewRuns() ([]config.Role, error)
	ResumeNewRuns(roles []config.Role) error
}

// PRWalker asks the dev agent to walk a stale pull request again (spec 60
// §6.3 P3). The dev agent's hook is wired by the daemon.
type PRWalker interface {
	RestartPRWalk(ctx context.Context, pr int64) error
}

// Vault receives the external actions a remediation would need secrets
// for. The vault of spec 70 does not exist yet: with a nil Vault such
// actions are escalated as incidents only.
type Vault interface {
	Request(ctx context.Context, a VaultAction) error
}

// VaultAction is one external side effect the supervisor asks a human to
// approve.
type VaultAction struct {
	Fingerprint string
	What        string
	Why         string
}

// FindingsSink receives, after each run, how many findings of each rule
// and severity are open (the disinto_supervisor_findings gauge); the
// daemon wires it to lib/metrics.
type FindingsSink interface {
	SupervisorFindings(project string, counts map[FindingKey]int)
}

// FindingKey is a rule and severity, a label pair of the findings gauge.
type FindingKey struct {
	Rule     string
	Severity Severity
}

// Checkout is one of the factory's clones the supervisor looks after: its
// main checkout's git state and its worktrees.
type Checkout struct {
	Dir     string
	Primary string
}

// Options configures the supervisor of one project.
type Options struct {
	Project *config.Project
	// Forge acts as the supervisor bot on the project repository; the
	// incidents are filed there.
	Forge forgeAPI
	// Engine is the Docker engine; nil when no socket is mounted (the
	// container rules then report "not observable").
	Engine engineAPI
	// Stack is the compose project whose containers and volumes are
	// watched; "" watches only the listed containers.
	Stack string
	// PruneLabels narrow the image and build cache prunes to objects
	// carrying these labels (key=value); empty prunes every dangling one.
	PruneLabels []string
	// Host reads memory and disk; default ProcHost.
	Host HostSource
	// Heartbeats lists the agents' running work; nil means unknown:
	// the git-state and stale-worktree rules then report without acting.
	Heartbeats HeartbeatSource
	// Pauser pauses new runs during a memory crisis; nil: not wired.
	Pauser Pauser
	// Walker restarts the dev agent's walk of a stale pull request.
	Walker PRWalker
	// Vault receives external actions; nil until the vault exists.
	Vault Vault
	// Analyst is the model, asked only about unknown anomalies; nil
	// escalates them with the evidence alone.
	Analyst Analyst
	// Findings receives the open findings' counts; nil: none.
	Findings FindingsSink
	// Journal is the ops repository; nil (or a failing one) journals to
	// the local state dir.
	Journal Journal
	// DataDir is the daemon's data dir: lock files are looked for there.
	DataDir string
	// StateDir holds the supervisor's state and local journal.
	StateDir string
	// LedgerDir is the run ledger, read for repeated failures.
	LedgerDir string
	// LogDir holds the agents' logs, rotated under disk pressure.
	LogDir string
	// Checkouts are the clones whose git state and worktrees are watched.
	Checkouts []Checkout
	// Maintainers are @-mentioned in incidents.
	Maintainers []string
	// Rules replaces the rule table (tests); default Rules().
	Rules []Rule
	Now   func() time.Time
	Log   zerolog.Logger
	// kill signals a process group (tests of the helper process use the
	// real one); default syscall.Kill.
	kill func(pid int, sig int) error
}

// Agent is the supervisor of one project.
type Agent struct {
	o     Options
	store stateStore
	self  forge.Self
	mu    sync.Mutex
	last  Outcome
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the supervisor of o.Project.
func New(o Options) (*Agent, error) {
	if o.Project == nil || o.StateDir == "" {
		return nil, errors.New("supervisor: project and state dir are required")
	}
	if o.Host == nil {
		o.Host = ProcHost{}
	}
	if o.Rules == nil {
		o.Rules = Rules()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.kill == nil {
		o.kill = killGroup
	}
	a := &Agent{o: o, store: stateStore{path: filepath.Join(o.StateDir, stateFile)}}
	if st, err := a.store.load(); err == nil {
		a.last = st.Last
	}
	return a, nil
}

// Tick is one run of the control loop: collect, evaluate, remediate,
// escalate, journal. It fails only when its own state cannot be kept;
// every other failure is a finding or a journalled action error.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	id := ""
	if run != nil {
		id = run.ID
	}
	out, err := a.RunOnce(ctx, id)
	if err != nil {
		return err
	}
	if run != nil && len(out.Actions)+countEscalated(out.Findings) > 0 {
		rec := ledger.Record{Reason: ledger.ReasonDone,
			Detail: fmt.Sprintf("%d findings, %d actions", len(out.Findings), len(out.Actions))}
		if countEscalated(out.Findings) > 0 {
			rec.Reason, rec.Code = ledger.ReasonEscalated, CodeIncident
		}
		if rerr := run.Record(rec); rerr != nil {
			run.Log.Warn().Err(rerr).Msg("record supervisor run")
		}
	}
	return nil
}

// stateFile is the state's file in the state dir.
const stateFile = "supervisor.json"

// CodeIncident is the ledger code of a run that filed or updated an
// incident.
const CodeIncident ledger.Code = "supervisor.incident"

// countEscalated counts the findings with an incident.
func countEscalated(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Incident != 0 {
			n++
		}
	}
	return n
}

// RunOnce runs the loop once and returns what it found and did.
func (a *Agent) RunOnce(ctx context.Context, runID string) (Outcome, error) {
	st, err := a.store.load()
	if err != nil {
		return Outcome{}, err
	}
	now := a.o.Now()
	if runID == "" {
		runID = fmt.Sprintf("%s-supervisor-%s", a.o.Project.Name, now.UTC().Format("20060102T150405"))
	}
	snap := a.collect(ctx, st, now)
	p := &pass{a: a, ctx: ctx, st: st, snap: snap, cfg: &a.o.Project.Supervisor, now: now, log: a.o.Log}
	p.evaluate()
	p.escalate()
	out := Outcome{Run: runID, At: now, Findings: p.findings, Actions: p.actions}
	out.Journal = a.journal(ctx, snap, out, p.analysis)
	st.Last = out
	st.Snapshots = append(st.Snapshots, *snap)
	if n := len(st.Snapshots); n > keepSnapshots {
		st.Snapshots = st.Snapshots[n-keepSnapshots:]
	}
	if err := a.store.save(st); err != nil {
		return out, err
	}
	a.mu.Lock()
	a.last = out
	a.mu.Unlock()
	if a.o.Findings != nil {
		counts := map[FindingKey]int{}
		for _, r := range a.o.Rules {
			counts[FindingKey{Rule: r.ID, Severity: r.Severity}] = 0 // a cleared rule reads 0
		}
		for _, f := range out.Findings {
			counts[FindingKey{Rule: f.Rule, Severity: f.Severity}]++
		}
		a.o.Findings.SupervisorFindings(a.o.Project.Name, counts)
	}
	a.o.Log.Info().Int("findings", len(out.Findings)).Int("actions", len(out.Actions)).Str("journal", out.Journal).Msg("supervisor run done")
	return out, nil
}
