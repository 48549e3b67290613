package dev

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// forgeAPI is the part of *forge.RepoClient the agent uses. Every method
// is safe for concurrent use; errors wrap the forge sentinels.
type forgeAPI interface {
	Me(ctx context.Context) (forge.User, error)
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	// EditComment fails with forge.ErrNotFound when comment id is gone.
	EditComment(ctx context.Context, id int64, body string) (forge.Comment, error)
	// DeleteComment fails with forge.ErrNotFound when comment id is gone.
	DeleteComment(ctx context.Context, id int64) error
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	SetAssignees(ctx context.Context, n int64, logins []string) error
	CloseIssue(ctx context.Context, n int64) error
	// Claim fails with forge.ErrClaimed when another identity holds n or
	// wins a concurrent claim; a loser leaves no trace. Only claim comments
	// of the agent and of bots take part.
	Claim(ctx context.Context, n int64, bots []string) (forge.Claim, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	GetPull(ctx context.Context, n int64) (forge.PullRequest, error)
	CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error)
	ClosePull(ctx context.Context, n int64) error
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	// CollaboratorPermission fails with forge.ErrForbidden unless the bot
	// may read others' permissions (admin on the repository).
	CollaboratorPermission(ctx context.Context, login string) (forge.Permission, error)
	CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error)
	PullDiff(ctx context.Context, n int64) (string, error)
	// Writers and LabelEvents tell maintainers' work from outsiders'
	// (origin.go).
	Writers(ctx context.Context) ([]forge.User, error)
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
	// Merge merges n only if its head is still opts.HeadSHA (else
	// forge.ErrHeadMoved).
	Merge(ctx context.Context, n int64, opts forge.MergeOptions) error
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// ciLogs finds the log of the failure a combined status reports.
// *cilog.Source implements it. A Log that is not Found means no source had
// one; an error says why a source failed, and may come with a log.
type ciLogs interface {
	Fetch(ctx context.Context, cs forge.CombinedStatus) (cilog.Log, error)
}

var _ ciLogs = (*cilog.Source)(nil)

// runHandle is what the agent needs of the daemon's runtime: tracked
// background work keyed per issue, the run's logger, and the ledger.
// *agent.Run implements it.
type runHandle interface {
	// Go runs fn in a tracked goroutine unless work with key is running.
	Go(ctx context.Context, key string, fn func(ctx context.Context)) bool
	// Busy reports whether work with key is running.
	Busy(key string) bool
	// Logger carries the agent, project and run keys.
	Logger() zerolog.Logger
	// Record appends a terminal ledger record.
	Record(rec ledger.Record) error
}

var _ runHandle = (*agent.Run)(nil)

// Limits bound the work on one issue.
type Limits struct {
	// CIFixes is the number of CI code failures the session may fix; the
	// next failure blocks the issue (ci.exhausted). Default 3.
	CIFixes int
	// InfraRetries is the number of automatic re-runs of CI after an
	// infrastructure-looking failure. Default 1.
	InfraRetries int
	// ReviewRounds is the number of change requests answered; the next
	// blocks the issue (review.exhausted). Default 5.
	ReviewRounds int
	// MergeAttempts bounds merges refused by the forge. Default 3.
	MergeAttempts int
	// Rebases bounds the rebases of an approved pull request that fell
	// behind the primary branch or conflicts with it, the agent's own
	// (clean) ones and those the session is asked for (on a conflict)
	// alike; the next time blocks the issue. Default 3.
	Rebases int
	// CITimeout bounds the wait for a CI result on one head; then the
	// issue is escalated (ci.timeout). Default 30 min.
	CITimeout time.Duration
	// ReviewTimeout bounds the wait for a verdict on a green head; then the
	// issue is escalated (review.timeout). Default 3 h.
	ReviewTimeout time.Duration
	// InFlight is how many issues the agent works at once. Default 1.
	InFlight int
	// ClaimGrace is how long an unassigned in-progress issue is left alone
	// before it counts as stale. Default 60 s.
	ClaimGrace time.Duration
	// MaxTurns bounds each model run (0: the CLI's default).
	MaxTurns int
	// IssueBudget bounds the model tokens and dollars of all the runs of
	// one issue (zero: none); an issue at its bound waits until it is
	// raised.
	IssueBudget config.Bound
	// SessionTimeout bounds each model run (0: the runner's default).
	SessionTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.CIFixes, 3)
	def(&l.InfraRetries, 1)
	def(&l.ReviewRounds, 5)
	def(&l.MergeAttempts, 3)
	def(&l.Rebases, 3)
	def(&l.InFlight, 1)
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&l.ClaimGrace, 60*time.Second)
	dur(&l.CITimeout, 30*time.Minute)
	dur(&l.ReviewTimeout, 3*time.Hour)
	return l
}

// Options configures an Agent.
type Options struct {
	// Project is the project name; Repo its owner/name.
	Project, Repo string
	// PrimaryBranch is the branch pull requests target.
	PrimaryBranch string
	// CISystem is config.CINone, CIStatuses or CIWoodpecker; with none a
	// pushed head goes straight to review.
	CISystem string
	// Mirrors maps mirror names to git URLs pushed after each merge,
	// through MirrorVault (mirror.go); the agent never pushes them.
	Mirrors map[string]string
	// MirrorVault files the mirror pushes; nil: none is pushed (said in
	// the log at each merge).
	MirrorVault MirrorVault
	// MirrorRequests is the file the requests the vault has not taken
	// yet are kept in across restarts (datadir.Layout.MirrorRequests);
	// "" keeps them in memory only.
	MirrorRequests string
	// Forge acts as the dev bot on the project repository.
	Forge forgeAPI
	// Pulls, when set, is the project's listing of open pull requests
	// shared with its other roles (forgeview); the agent's writes to pull
	// requests invalidate it. Nil: every tick lists them itself.
	Pulls pullsView
	// CILogs finds the log of a failed CI job for the session that fixes
	// it; nil: the session gets the statuses' descriptions and links only.
	CILogs ciLogs
	// Claude runs the model sessions.
	Claude claude.Runner
	// Git works in the agent's own clone.
	Git gitOps
	// Formula is the dev formula the first prompt is rendered from.
	Formula *formula.Formula
	// LiveFormula, when set, returns the dev formula in force, which
	// follows its overrides (formula.Live with CheckFormula); Formula is
	// then only the one checked at start.
	LiveFormula func() *formula.Formula
	// Lessons, when set, returns the bot's lessons learned for the first
	// prompt of a session.
	Lessons func(context.Context) string
	// DataDir is the daemon's data directory.
	DataDir string
	// Sandbox holds the sessions' workspaces; nil keeps them, unisolated,
	// under <DataDir>/sessions.
	Sandbox *sandbox.Sandbox
	// Model and Backend select the model of the sessions.
	Model, Backend string
	// BotUsernames are the factory's forge logins: their comments are not
	// shown to the model as human comments (the agent's own login is always
	// excluded), and only their claim comments contend for an issue.
	BotUsernames []string
	// ReviewBot is the review agent's login: only its verdicts count. When
	// empty, only a formal review of the head by a collaborator with write
	// access counts, never a marker; checking who may write takes the dev
	// bot admin on the repository.
	ReviewBot string
	// ChoreBots maps a scheduled role ("gardener") to its bot's login: the
	// dev bot merges that bot's approved, green pull requests from
	// chore/<role>-* branches (see chores.go).
	ChoreBots map[string]string
	// Maintainers are @-mentioned when an issue is escalated or waits for
	// them; when the forge will not say who may write to the repository,
	// they are the users whose approvals count (autonomy.go).
	Maintainers []string
	// Autonomy is how far the agent takes a change alone: the level of
	// the work on an issue and of chore pull requests, and the protected
	// paths. A zero value is level auto with the default protected paths
	// (config.DefaultAutonomy); ProtectedPaths empty but not nil protects
	// nothing.
	Autonomy config.Autonomy
	// Secrets are masked in everything the agent posts or logs.
	Secrets []string
	// Limits bound the work; zero fields take defaults.
	Limits Limits
	// StateDir holds the per-issue state; default <DataDir>/state/<Project>.
	// Two dev agents of one project (a local-model agent beside the
	// default one) each need their own.
	StateDir string
	// Ready, when set, is asked before new work is claimed; an error
	// claims nothing this tick (an unreachable model backend). Work in
	// flight goes on.
	Ready func(ctx context.Context) error
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Log is the agent's logger.
	Log zerolog.Logger
	// Lease, when set with Instance, makes the agent's hold on an issue a
	// lease of that length (lease.go): agents of several replicas acting
	// as one bot tell whose work an in-progress issue is, and one takes
	// over the work of an instance that stopped renewing. Zero: a single
	// replica, no lease comments.
	Lease time.Duration
	// Instance names this process's data dir (the forge client's claim
	// instance): the holder a lease names.
	Instance string
}

// Agent is the dev agent of one project. Tick is called by the scheduler;
// model sessions run in goroutines the agent tracks (Wait drains them).
type Agent struct {
	o   Options
	lim Limits
	st  store
	red *redact.Redactor
	log zerolog.Logger
	sb  *sandbox.Sandbox
	m   map[Stage]stageDef

	issues issueList

	mu   sync.Mutex
	self forge.Self

	// mirrorMu guards unfiled, the mirror pushes the vault has not taken
	// yet, by mirror (mirror.go).
	mirrorMu      sync.Mutex
	unfiled       map[string]MirrorPush
	mirrorLoaded  bool
	mirrorLoadErr error // a kept file that did not decode, said once

	// chores counts refused merges of chore pull requests (chores.go).
	chores choreAttempts

	// leases are this instance's leases by issue (lease.go).
	leases leaseBook

	// judge decides whose word an issue is (origin.go).
	judge *provenance.Judge
}

var _ agent.Agent = (*Agent)(nil)

// New validates o and returns an agent.
func New(o Options) (*Agent, error) {
	switch {
	case o.Project == "" || o.Repo == "":
		return nil, errors.New("dev agent: project and repo required")
	case o.Forge == nil || o.Claude == nil || o.Git == nil:
		return nil, errors.New("dev agent: forge, claude and git required")
	case o.Formula == nil:
		return nil, errors.New("dev agent: dev formula required")
	case o.DataDir == "":
		return nil, errors.New("dev agent: data dir required")
	}
	if err := checkFollowups(o.Formula); err != nil {
		return nil, fmt.Errorf("dev agent: %w", err)
	}
	if o.PrimaryBranch == "" {
		o.PrimaryBranch = "main"
	}
	if o.CISystem == "" {
		o.CISystem = config.CIStatuses
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Autonomy.Level == "" {
		o.Autonomy.Level = config.AutonomyAuto
	}
	if err := o.Autonomy.Level.Validate(); err != nil {
		return nil, fmt.Errorf("dev agent: autonomy level: %w", err)
	}
	if o.Autonomy.ProtectedPaths == nil {
		o.Autonomy.ProtectedPaths = config.DefaultProtectedPaths()
	}
	if o.Pulls != nil {
		o.Forge, o.Git = viewedForge{o.Forge, o.Pulls}, viewedGit{o.Git, o.Pulls}
	}
	sb := o.Sandbox
	if sb == nil {
		var err error
		if sb, err = sandbox.New(sandbox.Options{Root: datadir.New(o.DataDir).Sessions(), Log: o.Log}); err != nil {
			return nil, fmt.Errorf("dev agent: %w", err)
		}
	}
	if o.StateDir == "" {
		o.StateDir = datadir.New(o.DataDir).State(o.Project)
	}
	a := &Agent{
		o:   o,
		lim: o.Limits.withDefaults(),
		st:  store{root: o.StateDir},
		red: redact.New(o.Secrets...),
		log: o.Log.With().Str(logx.KeyAgent, string(config.RoleDev)).Str(logx.KeyProject, o.Project).Logger(),
		sb:  sb,
		m:   machine(),
	}
	a.judge = provenance.New(provenance.Options{Forge: o.Forge, Bots: a.bots(), Now: o.Now})
	return a, nil
}

// State returns the persisted state of issue n, for status displays.
func (a *Agent) State(n int64) (State, bool, error) { return a.st.load(n) }

// bots returns the factory's identities besides the agent: the configured
// bot logins and the review bot.
func (a *Agent) bots() []string {
	out := append([]string(nil), a.o.BotUsernames...)
	if a.o.ReviewBot != "" {
		out = append(out, a.o.ReviewBot)
	}
	return out
}

// branchFor is the one branch naming function (spec 00 §6): the first
// attempt at issue n works on fix/issue-N, attempt k ≥ 2 (a fresh start
// after an abandoned pull request) on fix/issue-N-k. issueOfBranch and
// attemptOfBranch read both forms back.
func branchFor(n int64, k int) string {
	b := "fix/issue-" + strconv.FormatInt(n, 10)
	if k > 1 {
		b += "-" + strconv.Itoa(k)
	}
	return b
}

// identity returns the bot's login; a cycle without it is aborted (W-DP-1).
func (a *Agent) identity(ctx context.Context) (string, error) { return a.self.Login(ctx, a.o.Forge.Me) }

// issueLog is the scoped logger of one issue's work: the logger of the
// run advancing it, with the issue's keys.
func (a *Agent) issueLog(st State) *zerolog.Logger {
	base := a.log
	if st.run != nil {
		base = st.run.Logger()
	}
	c := base.With().Int64(logx.KeyIssue, st.Issue).Str(logx.KeyPhase, string(st.Stage))
	if st.PR > 0 {
		c = c.Int64(logx.KeyPR, st.PR)
	}
	if st.SessionID != "" {
		c = c.Str(logx.KeySession, st.SessionID)
	}
	l := c.Logger()
	return &l
}

// workKey names the runtime's tracked work of issue n.
func workKey(n int64) string { return "issue-" + strconv.FormatInt(n, 10) }

// spawn runs fn as the tracked work of st's issue, on the run that
// advances st, unless that work is already running.
func (a *Agent) spawn(ctx context.Context, st State, fn func(ctx context.Context)) bool {
	if st.run == nil {
		a.issueLog(st).Error().Msg("no run to start the issue's work on")
		return false
	}
	return st.run.Go(ctx, workKey(st.Issue), fn)
}
