// Package reproduce is the bug-report track: an issue the gardener labels
// bug-report is reproduced in a browser, triaged to its root causes when
// the cause is not obvious, and verified once its fixes are closed.
//
// Each run is a sidecar: one ephemeral container of the reproduce image
// (docker/reproduce), started through the Docker engine API by lib/runner,
// in which a bounded claude -p session drives Debian's chromium through
// the Playwright MCP server (--mcp-config, an explicit tool allowlist, no
// other tool but reading). The session holds no forge credential and
// changes nothing: it ends its answer with one JSON object (Outcome),
// which is validated here, and this package alone applies what follows
// from it, once: the comment with the findings, the screenshots as issue
// attachments, the fix issues (with resolved label ids), the label
// transition and, after a successful verification, the close.
//
// It is a scheduled role of its own (config.RoleReproduce, every 60 s,
// like the reference's dispatcher cycle), opt-in per project, acting as
// reproduce-bot. Runs of
// one project happen one at a time (the runtime's work key and a stack
// lock file under the data dir, for one-shot runs beside the daemon);
// a run that fails before the session answers is retried with backoff
// and, after MaxAttempts, the issue is labelled blocked with a comment.
package reproduce

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/runner"
)

// Forge is what the agent needs of the project's forge
// (*forge.RepoClient implements it).
type Forge interface {
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	CloseIssue(ctx context.Context, n int64) error
	UploadIssueAttachment(ctx context.Context, n int64, name string, data []byte) (forge.Attachment, error)
	ListIssueAttachments(ctx context.Context, n int64) ([]forge.Attachment, error)
	// Writers and LabelEvents tell a maintainer's bug report from an
	// outsider's, whose origin its fix issues take (provenance.Forge).
	Writers(ctx context.Context) ([]forge.User, error)
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
}

// Sidecars runs a sidecar job (*runner.Launcher implements it).
type Sidecars interface {
	Run(ctx context.Context, j runner.Job) (runner.Outcome, error)
}

// Defaults of Options.
const (
	// DefaultMaxTurns bounds a session (the reference's 40).
	DefaultMaxTurns = 40
	// MaxAttempts is how many runs that failed before an answer an issue
	// gets before it is labelled blocked.
	MaxAttempts = 3
	// DefaultBackoff is the wait after the first failed attempt; it
	// doubles with each further one.
	DefaultBackoff = 5 * time.Minute
)

// DefaultLimits bound a sidecar: a browser, its MCP server and the CLI
// need more room than a vault action.
var DefaultLimits = runner.Limits{Memory: 2 << 30, NanoCPUs: 15e8, Pids: 1024, Tmp: 512 << 20}

// Options configure an Agent.
type Options struct {
	// Project and Repo name the project; Bot is the login the agent acts
	// as (its fix issues are recognised by it).
	Project, Repo, Bot string
	Forge              Forge
	// Sidecars run the sidecars; nil means no Docker engine is wired, and
	// the agent only lists the bug reports for status.
	Sidecars Sidecars
	// Formulas holds reproduce.toml and triage.toml.
	Formulas func(name string) (*formula.Formula, error)
	// Secrets are the sidecar's secrets: the model credential
	// (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN). Env is its
	// environment (ANTHROPIC_BASE_URL); Network its Docker network.
	Secrets map[string]string
	Env     map[string]string
	Network string
	// Model and MaxTurns bound the session; DefaultMaxTurns when zero.
	Model    string
	MaxTurns int
	// Limits bound the container; DefaultLimits field by field when zero.
	Limits runner.Limits
	// StateDir holds the attempts file; LockDir the stack lock.
	StateDir, LockDir string
	// Backoff is the first retry's wait; DefaultBackoff when zero.
	Backoff time.Duration
	// Redactor masks the factory's secrets in the untrusted text that
	// goes into a prompt and in the errors a comment quotes (nil masks
	// the built-in credential patterns only).
	Redactor *redact.Redactor
	Log      zerolog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Agent is the bug-report track of one project.
type Agent struct {
	o        Options
	attempts *attempts

	mu      sync.Mutex
	seen    []agent.Item // the last tick's bug reports, for status
	running *agent.Item  // the sidecar running now
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New checks o and returns an Agent.
func New(o Options) (*Agent, error) {
	if o.Forge == nil || o.Formulas == nil {
		return nil, fmt.Errorf("reproduce agent of %s: forge and formulas are required", o.Project)
	}
	if o.StateDir == "" || o.LockDir == "" {
		return nil, fmt.Errorf("reproduce agent of %s: state and lock directories are required", o.Project)
	}
	if o.MaxTurns == 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Limits = limitsOr(o.Limits, DefaultLimits)
	return &Agent{o: o, attempts: newAttempts(o.StateDir, o.Backoff)}, nil
}

// limitsOr is l with every zero field taken from d.
func limitsOr(l, d runner.Limits) runner.Limits {
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.NanoCPUs == 0 {
		l.NanoCPUs = d.NanoCPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.Tmp == 0 {
		l.Tmp = d.Tmp
	}
	return l
}

// workKey is the runtime's key of the project's one sidecar at a time.
const workKey = "sidecar"

// Tick finds the bug report due next and starts its sidecar as
// background work; while one runs, it starts nothing.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	if run.Busy(workKey) {
		return nil
	}
	cands, err := a.Candidates(ctx)
	if err != nil {
		return err
	}
	a.keep(cands)
	if a.o.Sidecars == nil || len(cands) == 0 {
		return nil
	}
	now := a.o.Now()
	for _, c := range cands {
		if !a.attempts.due(c.Issue.Number, now) {
			continue
		}
		c := c
		run.Go(ctx, workKey, func(ctx context.Context) {
			a.setRunning(&agent.Item{Project: a.o.Project, Role: string(config.RoleReproduce), Issue: c.Issue.Number,
				Stage: string(c.Mode) + " running", Started: a.o.Now()})
			defer a.setRunning(nil)
			res := a.Work(ctx, c)
			if err := run.Record(res.record(c)); err != nil {
				run.Log.Warn().Err(err).Msg("record reproduce run")
			}
		})
		return nil
	}
	return nil
}

// Candidate is a bug report due for a run, and the run it is due for.
type Candidate struct {
	Issue forge.Issue
	Mode  Mode
	// Fixes are the closed fix issues of a verify run.
	Fixes []forge.Issue
}

// Candidates lists the open bug reports due for a run, oldest first,
// each with its mode, decided from forge state alone: a verify run is
// due when every fix issue the agent filed for the report is closed.
func (a *Agent) Candidates(ctx context.Context) ([]Candidate, error) {
	reports, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBugReport}})
	if err != nil {
		return nil, fmt.Errorf("list bug reports of %s: %w", a.o.Repo, err)
	}
	var cands []Candidate
	var since time.Time
	for _, i := range oldestFirst(reports) {
		m, ok := modeOf(i)
		if !ok {
			continue
		}
		if m == ModeVerify && (since.IsZero() || i.Created.Before(since)) {
			since = i.Created
		}
		cands = append(cands, Candidate{Issue: i, Mode: m})
	}
	if since.IsZero() {
		return cands, nil
	}
	fixes, err := a.fixIssues(ctx, since)
	if err != nil {
		return nil, err
	}
	out := cands[:0]
	for _, c := range cands {
		if c.Mode == ModeVerify {
			if !fixesDone(c.Issue.Number, fixes) {
				continue
			}
			c.Fixes = fixes[c.Issue.Number]
		}
		out = append(out, c)
	}
	return out, nil
}

// fixIssues maps each bug report to the fix issues the agent filed for it
// (any state, any labels: the dev agent takes backlog off when it claims
// one), recognised by marker and author. Only issues updated since the
// oldest report waiting for verification can be among them.
func (a *Agent) fixIssues(ctx context.Context, since time.Time) (map[int64][]forge.Issue, error) {
	all, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll, Since: since})
	if err != nil {
		return nil, fmt.Errorf("list fix issues of %s: %w", a.o.Repo, err)
	}
	out := map[int64][]forge.Issue{}
	for _, i := range all {
		if p := fixParent(i, a.o.Bot); p > 0 {
			out[p] = append(out[p], i)
		}
	}
	return out, nil
}

// oldestFirst sorts issues by number, the forge's creation order.
func oldestFirst(is []forge.Issue) []forge.Issue {
	out := slices.Clone(is)
	slices.SortFunc(out, func(a, b forge.Issue) int { return cmp.Compare(a.Number, b.Number) })
	return out
}

// keep remembers the due bug reports for Report.
func (a *Agent) keep(cands []Candidate) {
	items := make([]agent.Item, 0, len(cands))
	for _, c := range cands {
		st := a.attempts.get(c.Issue.Number)
		it := agent.Item{Project: a.o.Project, Role: string(config.RoleReproduce), Issue: c.Issue.Number, Stage: string(c.Mode) + " due",
			Started: c.Issue.Created}
		if st.Count > 0 {
			it.Stage = string(c.Mode) + " backing off"
			it.Attempts = map[string]int{"run": st.Count}
			it.Limits = map[string]int{"run": MaxAttempts}
			it.Waiting = st.Last
		}
		items = append(items, it)
	}
	a.mu.Lock()
	a.seen = items
	a.mu.Unlock()
}

// setRunning sets the item of the running sidecar (nil: none).
func (a *Agent) setRunning(it *agent.Item) {
	a.mu.Lock()
	a.running = it
	a.mu.Unlock()
}

// Report lists the running sidecar and the bug reports due at the last
// tick (status).
func (a *Agent) Report() agent.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	var items []agent.Item
	if a.running != nil {
		items = append(items, *a.running)
	}
	for _, it := range a.seen {
		if a.running == nil || it.Issue != a.running.Issue {
			items = append(items, it)
		}
	}
	return agent.Report{Items: items}
}
