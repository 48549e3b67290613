// Package review is the review agent: it reviews every open pull request
// into the primary branch once per head commit, with a claude session that
// writes its verdict as JSON, and publishes the verdict as a comment carrying
// the reference's reviewed marker plus our machine-readable verdict marker,
// and as a formal review pinned to the head commit. It never pushes, merges
// or labels.
package review

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/verdict"
)

// Defaults of the reference (spec 20 §12).
const (
	DefaultMaxPerTick = 3
	DefaultDiffLimit  = 25000
	DefaultTimeout    = 900 * time.Second
	DefaultMaxTurns   = 200
	// breakerLimit is how many failed attempts on one head SHA stop
	// further attempts until a new push.
	breakerLimit = 3
)

// forgeAPI is what the reviewer needs from the forge, acting as the review
// bot. *forge.RepoClient implements it.
type forgeAPI interface {
	Me(ctx context.Context) (forge.User, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	PullDiff(ctx context.Context, n int64) (string, error)
	CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	CreateReview(ctx context.Context, n int64, in forge.NewReview) (forge.Review, error)
	DismissReview(ctx context.Context, n, id int64, message string) error
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	// GetIssue reads the issue a pull request resolves (the test-integrity
	// guard's excuses).
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	// Writers and LabelEvents tell a maintainer's pull request from an
	// outsider's (provenance.Forge).
	Writers(ctx context.Context) ([]forge.User, error)
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// pullsView is the project's listing of open pull requests shared with its
// other roles; reuse allows a listing read recently (at most a bounded
// time ago) instead of a request. *forgeview.Reader, one role's access
// to the shared view, implements it. The reviewer's own writes
// (comments, reviews, issues) change nothing the listing holds.
type pullsView interface {
	OpenPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error)
}

var _ pullsView = (*forgeview.Reader)(nil)

// Checkout gives the reviewer read-only working trees of pull request heads.
type Checkout interface {
	// Checkout returns the sandbox workspace of the pull request, its
	// checkout holding the head commit sha, detached. It reuses the
	// workspace of an earlier review of the same pull request, so that a
	// resumed session finds its conversation.
	Checkout(ctx context.Context, pr int64, sha string) (*sandbox.Workspace, error)
	// Diff returns the diff from..to, computed in the agent's own clone,
	// and whether from is an ancestor of to (false after a force-push).
	Diff(ctx context.Context, from, to string) (diff string, ancestor bool, err error)
	// PrimaryFS returns the files of the primary branch as the forge has
	// them: the project's conventions, never the pull request's.
	PrimaryFS(ctx context.Context) (fs.FS, error)
	// Remove deletes the pull request's working tree, if any.
	Remove(ctx context.Context, pr int64) error
}

// Options configures the review agent of one project.
type Options struct {
	Project *config.Project
	Forge   forgeAPI
	// Pulls, when set, lists the open pull requests for the project's
	// roles together (forgeview); nil: every tick lists them itself.
	Pulls    pullsView
	Claude   claude.Runner
	Formula  *formula.Formula
	Checkout Checkout
	// StateDir holds one JSON file per pull request.
	StateDir string
	// Backend and Model select the model; Model defaults to the formula's.
	Backend string
	Model   string
	// TokenEnv names the variable holding the review bot's token in the
	// session's environment, for the prompt's footer (never the value).
	// Empty: the session has no forge token (the orchestrator does every
	// forge write) and the prompt names none.
	TokenEnv   string
	Timeout    time.Duration
	MaxPerTick int
	DiffLimit  int
	Now        func() time.Time

	// LiveFormula, when set, returns the review-pr formula in force, which
	// follows its overrides; Formula is then only the one at start.
	LiveFormula func() *formula.Formula
	// Lessons, when set, returns the review bot's lessons learned.
	Lessons func(context.Context) string
	// Objectives, when set, returns what the project's structural graph
	// says a change to files affects (objectives, prerequisites, alerts
	// on done prerequisites), for the prompt; "" when it knows nothing.
	Objectives func(ctx context.Context, files []string) string
}

// Agent reviews pull requests of one project.
type Agent struct {
	opts  Options
	store store
	bot   string // the review bot's login, resolved once

	// judge decides whose word a pull request is, for the findings
	// derived from it (origin.go).
	judgeOnce sync.Once
	judge     *provenance.Judge
}

var _ agent.Agent = (*Agent)(nil)

// New returns a review agent.
func New(opts Options) (*Agent, error) {
	if opts.Project == nil || opts.Forge == nil || opts.Claude == nil || opts.Formula == nil || opts.Checkout == nil || opts.StateDir == "" {
		return nil, errors.New("review: project, forge, claude, formula, checkout and state dir are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxPerTick <= 0 {
		opts.MaxPerTick = DefaultMaxPerTick
	}
	if opts.DiffLimit <= 0 {
		opts.DiffLimit = DefaultDiffLimit
	}
	if opts.Model == "" {
		opts.Model = opts.Formula.Model
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Agent{opts: opts, store: store{dir: opts.StateDir}}, nil
}

// wip matches titles the reference treats as work in progress.
var wip = regexp.MustCompile(`(?i)^\s*\[?WIP[\]:]`)

// candidate is a pull request that needs a review at its head.
type candidate struct {
	pr    forge.PullRequest
	st    *prState
	diff  string // fetched during selection, when CI had to be judged
	ciMsg string // CI line for the prompt
}

// Tick does one pass: it lists open pull requests (one forge request when
// everything is already reviewed, none when a scheduled tick finds the
// project's shared listing fresh), repairs half-published reviews, and
// starts at most MaxPerTick reviews in the background.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	if err := a.resolveBot(ctx); err != nil {
		return err
	}
	pulls, err := a.openPulls(ctx, run.Cause == agent.CauseSchedule)
	if err != nil {
		return fmt.Errorf("list pull requests: %w", err)
	}
	sort.Slice(pulls, func(i, j int) bool { return pulls[i].Number < pulls[j].Number })
	a.forgetClosed(ctx, pulls, run)

	started := 0
	for _, pr := range pulls {
		if started >= a.opts.MaxPerTick || ctx.Err() != nil {
			break
		}
		if pr.Base != a.opts.Project.PrimaryBranch || wip.MatchString(pr.Title) {
			continue
		}
		key := workKey(pr.Number)
		if run.Busy(key) {
			// A session for this pull request is still running; its state
			// is not ours to touch until it ends. Ticks never overlap, so
			// nothing else starts it before Go below.
			continue
		}
		log := run.Log.With().Int64(logx.KeyPR, pr.Number).Str(logx.KeySHA, short(pr.HeadSHA)).Logger()
		c, err := a.select1(ctx, pr, run.Cause == agent.CauseSchedule, log)
		if err != nil || c == nil {
			if err != nil {
				log.Warn().Err(err).Msg("skip pull request this tick")
			}
			continue
		}
		if !run.Go(ctx, key, func(ctx context.Context) { a.review(ctx, run, *c, log) }) {
			continue
		}
		started++
	}
	return nil
}

// openPulls lists the open pull requests: through the shared view when
// there is one (reuse allows its recent listing), else from the forge.
func (a *Agent) openPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error) {
	if a.opts.Pulls != nil {
		return a.opts.Pulls.OpenPulls(ctx, reuse)
	}
	return a.opts.Forge.ListPulls(ctx, forge.StateOpen)
}

// workKey names the runtime's tracked review work of pull request n.
func workKey(n int64) string { return fmt.Sprintf("pr-%d", n) }

func (a *Agent) resolveBot(ctx context.Context) error {
	if a.bot != "" {
		return nil
	}
	me, err := a.opts.Forge.Me(ctx)
	if err != nil {
		return fmt.Errorf("resolve review bot: %w", err)
	}
	a.bot = me.Login
	return nil
}

// select1 decides whether pr needs work now: nil when it is reviewed at
// its head, breaker-tripped, or waiting for CI. Half-published reviews are
// completed here, without the model. A scheduled tick reads a CI state
// that keeps not changing only every ciRecheck.
func (a *Agent) select1(ctx context.Context, pr forge.PullRequest, scheduled bool, log zerolog.Logger) (*candidate, error) {
	st, err := a.store.load(pr.Number)
	if err != nil {
		return nil, err
	}
	if st.SyncedHead != pr.HeadSHA {
		if err := a.sync(ctx, pr, st); err != nil {
			return nil, err
		}
	}
	if st.published(pr.HeadSHA) {
		return nil, nil
	}
	if st.Head == pr.HeadSHA && st.Output != nil {
		// Produced but not fully published: finish publishing.
		if err := a.publish(ctx, pr, st, log); err != nil {
			return nil, fmt.Errorf("complete publishing: %w", err)
		}
		log.Info().Msg("completed a half-published review")
		return nil, nil
	}
	if st.Errors[pr.HeadSHA] >= breakerLimit {
		log.Debug().Int("errors", st.Errors[pr.HeadSHA]).Msg("circuit breaker open until a new push")
		return nil, nil
	}
	c := &candidate{pr: pr, st: st, ciMsg: "not configured"}
	if a.opts.Project.CI.System == config.CINone {
		return c, nil
	}
	now := a.opts.Now()
	if !st.ciDue(pr.HeadSHA, now, scheduled, ciRecheck(a.opts.Project)) {
		log.Debug().Str("ci", orNone(st.CIState)).Msg("CI unchanged for a while; read again later")
		return nil, nil
	}
	cs, err := a.opts.Forge.CombinedStatus(ctx, pr.HeadSHA)
	if err != nil {
		return nil, fmt.Errorf("CI status: %w", err)
	}
	st.readCI(pr.HeadSHA, cs.State, now)
	if err := a.store.save(st); err != nil {
		return nil, err
	}
	c.ciMsg = string(cs.State)
	if cs.State == forge.CISuccess {
		return c, nil
	}
	// CI is not green: review anyway only when the change holds no code.
	// The answer is read once per head.
	if st.CodeCheckedHead != pr.HeadSHA {
		diff, err := a.opts.Forge.PullDiff(ctx, pr.Number)
		if err != nil {
			return nil, fmt.Errorf("diff: %w", err)
		}
		st.CodeCheckedHead, st.NonCode = pr.HeadSHA, patch.NonCode(patch.Files(diff))
		if err := a.store.save(st); err != nil {
			return nil, err
		}
		c.diff = diff
	}
	if !st.NonCode {
		log.Debug().Str("ci", orNone(cs.State)).Msg("waiting for CI")
		return nil, nil
	}
	c.ciMsg = orNone(cs.State) + " (not required — non-code PR)"
	return c, nil
}

func orNone(s forge.CIState) string {
	if s == "" {
		return "none reported"
	}
	return string(s)
}

// sync rebuilds the state of pr from the forge: the review bot's latest
// verdict (at the head or before it) and its failed attempts at the head.
func (a *Agent) sync(ctx context.Context, pr forge.PullRequest, st *prState) error {
	comments, err := a.opts.Forge.ListComments(ctx, pr.Number)
	if err != nil {
		return fmt.Errorf("list comments: %w", err)
	}
	reviews, err := a.opts.Forge.ListReviews(ctx, pr.Number)
	if err != nil {
		return fmt.Errorf("list reviews: %w", err)
	}
	if st.Errors == nil {
		st.Errors = map[string]int{}
	}
	st.Errors[pr.HeadSHA] = 0
	rounds := 0
	for _, c := range comments {
		if !strings.EqualFold(c.Author, a.bot) {
			continue
		}
		if hasErrorMarker(c.Body, pr.HeadSHA) {
			st.Errors[pr.HeadSHA]++
		}
		if v, sha, ok := verdict.CommentMarker(c, a.bot); ok {
			rounds++
			if sha != pr.HeadSHA {
				// An earlier head: the context of a re-review.
				st.Head, st.Verdict, st.CommentBody = sha, v, c.Body
				st.Output, st.CommentPosted, st.FormalPosted = nil, true, true
			}
		}
	}
	st.Round = rounds
	if r, ok := verdict.Read(comments, reviews, pr.HeadSHA, a.bot); ok {
		st.Previous = ""
		if st.Head != pr.HeadSHA {
			st.Previous = st.Head
		}
		st.Head, st.Verdict = pr.HeadSHA, r.Verdict
		st.CommentPosted = r.Source == verdict.FromComment
		st.FormalPosted = r.Formal
		st.Output = &verdict.Output{Verdict: r.Verdict, ReviewMarkdown: "(review text was posted earlier)"}
		if st.CommentPosted {
			st.CommentBody = r.Feedback
		}
	}
	st.SyncedHead = pr.HeadSHA
	return a.store.save(st)
}

// forgetClosed removes state and working trees of pull requests that are
// no longer open and have no review running.
func (a *Agent) forgetClosed(ctx context.Context, open []forge.PullRequest, run *agent.Run) {
	log := run.Log
	known, err := a.store.list()
	if err != nil {
		log.Warn().Err(err).Msg("list review state")
		return
	}
	isOpen := map[int64]bool{}
	for _, p := range open {
		isOpen[p.Number] = true
	}
	for _, n := range known {
		if isOpen[n] || run.Busy(workKey(n)) {
			continue
		}
		if err := a.opts.Checkout.Remove(ctx, n); err != nil {
			log.Warn().Err(err).Int64(logx.KeyPR, n).Msg("remove review worktree")
			continue
		}
		if err := a.store.remove(n); err != nil {
			log.Warn().Err(err).Int64(logx.KeyPR, n).Msg("remove review state")
		}
	}
}
