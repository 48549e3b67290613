package vault

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/text"
)

// MirrorFormula is the formula of a mirror push: pushing a merged commit
// of the project to an external mirror with a credential only the vault
// holds. It is mechanical: the daemon's vault role runs it itself
// (MirrorPusher), never a model session.
const MirrorFormula = "mirror-push"

// The variables of a mirror push.
const (
	MirrorVarName = "mirror" // the mirror's name in the project file
	MirrorVarSHA  = "sha"    // the merged commit, pushed as the primary branch
)

// mirrorTimeoutMinutes bounds one mirror push.
const mirrorTimeoutMinutes = 10

// mirrorSecretPattern is the form of a mirror credential's name
// (config.MirrorSecretName): allowed in mirror pushes without being on
// the policy's allowlist, and only there.
var mirrorSecretPattern = regexp.MustCompile(`^MIRROR_[A-Z0-9_]+_TOKEN$`)

// shaPattern is a full commit id.
var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// MirrorActionID is the id of pushing sha to mirror name: one action per
// mirror and commit, so that asking again (after a restart, a failed
// request) is the same request.
func MirrorActionID(name, sha string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	slug := strings.Trim(b.String(), "-")
	if len(slug) > 36 {
		slug = strings.TrimRight(slug[:36], "-")
	}
	return "mirror-" + slug + "-" + text.ShortSHA(sha)
}

// MirrorAction is the action that pushes sha of repo as the primary
// branch to the mirror name, with the secret named secret ("" for a
// mirror git reaches without one). It carries no URL: the dispatcher
// takes the mirror's URL from the project configuration, so an action
// cannot send the credential anywhere else.
func MirrorAction(repo, name, sha, secret string) Action {
	a := Action{ID: MirrorActionID(name, sha), Formula: MirrorFormula,
		Context:        fmt.Sprintf("Push %s of %s to the mirror %s", text.ShortSHA(sha), repo, name),
		Secrets:        []string{},
		TimeoutMinutes: mirrorTimeoutMinutes,
		Vars:           map[string]string{MirrorVarName: name, MirrorVarSHA: sha},
	}
	if secret != "" {
		a.Secrets = []string{secret}
	}
	return a
}

// Executors routes each job to the runner of its formula, else to Default
// (nil: only the formulas of By run).
type Executors struct {
	By      map[string]Executor
	Default Executor
}

var _ Executor = Executors{}

// Runs reports whether a runner takes formula; the dispatcher leaves the
// actions of any other formula pending.
func (rs Executors) Runs(formula string) bool {
	_, ok := rs.By[formula]
	return ok || rs.Default != nil
}

// Run implements Runner.
func (rs Executors) Run(ctx context.Context, job Job) (Outcome, error) {
	if r, ok := rs.By[job.Action.Formula]; ok {
		return r.Run(ctx, job)
	}
	if rs.Default == nil {
		return Outcome{}, fmt.Errorf("no runner for formula %s", job.Action.Formula)
	}
	return rs.Default.Run(ctx, job)
}

// formulaRunner is the optional capability of an Executor that takes only
// some formulas.
type formulaRunner interface {
	Runs(formula string) bool
}

// MirrorPusherOptions configures a MirrorPusher.
type MirrorPusherOptions struct {
	// Mirrors maps each mirror's name to its URL (the project file's
	// [mirrors]); credentials in a URL are ignored.
	Mirrors map[string]string
	// Git reads the project repository (the vault identity's forge
	// credentials); SourceURL is the repository and Clone the directory
	// of the pusher's own clone of it.
	Git       *git.Git
	SourceURL string
	Clone     string
	// Primary is the mirrored branch.
	Primary string
	// Attempts bounds the pushes of one run (default 3), Backoff the wait
	// after the first failure, doubling (default 10 s).
	Attempts int
	Backoff  time.Duration
	// Queue, when set, makes a failed push wait and run again, with
	// backoff and across restarts, until it succeeds or an operator
	// drops it; nil records the failure as the action's outcome.
	Queue *MirrorQueue
	Now   func() time.Time
	Log   zerolog.Logger
}

// MirrorPusher runs mirror-push actions in the daemon's vault role: it
// fetches the commit into its own clone of the project and pushes it to
// the configured mirror URL, handing the action's secret to git through
// its credential helper, scoped to the mirror (never argv, the remote's
// configuration or an environment an agent or a session shares). Why here
// and not in a runner container: the push needs the project's objects and
// git, which the daemon has, and nothing of it is a model session; the
// secret is resolved by the dispatcher for this one run and dropped after.
type MirrorPusher struct{ o MirrorPusherOptions }

var _ Executor = (*MirrorPusher)(nil)

// NewMirrorPusher returns a MirrorPusher.
func NewMirrorPusher(o MirrorPusherOptions) *MirrorPusher {
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 10 * time.Second
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &MirrorPusher{o: o}
}

// Names lists the configured mirrors, sorted.
func (m *MirrorPusher) Names() []string {
	out := make([]string, 0, len(m.o.Mirrors))
	for n := range m.o.Mirrors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Run pushes the job's commit. An action that can never push as given
// (an unknown mirror, a bad commit id, a commit not on the primary
// branch) is an Outcome, recorded once. A
// push that failed every attempt of the run is, with a Queue, an error
// wrapping ErrRetryLater: nothing changed on the mirror, the action stays
// ready and runs again after its backoff (Defer); without a Queue it is
// a failed Outcome. A commit the mirror already has (an ancestor of the
// last one pushed there) succeeds without a push. A clone that found no
// forge to fetch from is an error too: nothing was pushed, and the
// dispatcher tries again next cycle.
func (m *MirrorPusher) Run(ctx context.Context, job Job) (Outcome, error) {
	name, sha := job.Action.Vars[MirrorVarName], job.Action.Vars[MirrorVarSHA]
	raw, ok := m.o.Mirrors[name]
	switch {
	case !ok:
		return refused("no mirror %q in the project's [mirrors]", name), nil
	case !shaPattern.MatchString(sha):
		return refused("%q is not a commit id", sha), nil
	}
	target, err := m.target(raw, job)
	if err != nil {
		return refused("%v", err), nil
	}
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}
	r, err := m.o.Git.EnsureClone(ctx, m.o.SourceURL, m.o.Clone, "")
	if err != nil {
		return Outcome{}, fmt.Errorf("mirror %s: clone the project: %w", name, err)
	}
	var logs strings.Builder
	wait := m.o.Backoff
	for attempt := 1; ; attempt++ {
		err = r.Fetch(ctx)
		var on bool
		if err == nil {
			on, err = m.onPrimary(ctx, r, sha)
		}
		if err == nil && !on {
			return refused("%s is not on the project's primary branch %s: only merged commits are mirrored", text.ShortSHA(sha), m.o.Primary), nil
		}
		if err == nil {
			if last, ok := m.carried(ctx, r.IsAncestor, name, sha); ok {
				fmt.Fprintf(&logs, "%s is on %s already: carried by the push of %s\n", text.ShortSHA(sha), name, text.ShortSHA(last))
				m.pushedTo(job.Action.ID, name, last)
				return Outcome{Logs: logs.String()}, nil
			}
			err = r.PushMirror(ctx, target, sha+":refs/heads/"+m.o.Primary)
		}
		if err == nil {
			fmt.Fprintf(&logs, "pushed %s to %s as %s (attempt %d)\n", text.ShortSHA(sha), name, m.o.Primary, attempt)
			m.pushedTo(job.Action.ID, name, sha)
			return Outcome{Logs: logs.String()}, nil
		}
		fmt.Fprintf(&logs, "attempt %d: %v\n", attempt, err)
		if attempt >= m.o.Attempts || errors.Is(err, git.ErrRejected) || ctx.Err() != nil {
			return m.failed(ctx, job, err, logs.String())
		}
		m.o.Log.Warn().Str("mirror", name).Int("attempt", attempt).Msg("mirror push failed; trying again")
		select {
		case <-ctx.Done():
			return m.failed(ctx, job, ctx.Err(), logs.String())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// onPrimary reports whether sha is on the project's primary branch as
// just fetched. An action names its commit, and whoever may file actions
// could name any commit the forge has (an unmerged branch, a pull
// request's head); the mirror gets only what was merged. An error is
// transient: the branch is missing or git failed.
func (m *MirrorPusher) onPrimary(ctx context.Context, r *git.Repo, sha string) (bool, error) {
	head, err := r.RefSHA(ctx, "refs/remotes/"+git.Remote+"/"+m.o.Primary)
	switch {
	case err != nil:
		return false, err
	case head == "":
		return false, fmt.Errorf("the project has no branch %s", m.o.Primary)
	}
	known, err := r.RefSHA(ctx, sha)
	if err != nil || known == "" {
		return false, err // a commit the fetch did not bring is on no branch
	}
	return r.IsAncestor(ctx, sha, head)
}

// pushedTo notes a push that succeeded. The push is done whatever the
// queue says: a queue not saved costs an early retry of nothing, never a
// second outcome.
func (m *MirrorPusher) pushedTo(id, mirror, sha string) {
	if m.o.Queue == nil {
		return
	}
	if err := m.o.Queue.done(id, mirror, sha); err != nil {
		m.o.Log.Warn().Err(err).Msg("mirror queue not saved")
	}
}

// failed ends a run whose every attempt failed. With a Queue, nothing
// changed on the mirror, so the action runs again after its backoff
// (ErrRetryLater), unless the mirror refused the commit (it is ahead),
// which no retry mends. Without one, the failure is the outcome.
func (m *MirrorPusher) failed(ctx context.Context, job Job, cause error, logs string) (Outcome, error) {
	name, sha := job.Action.Vars[MirrorVarName], job.Action.Vars[MirrorVarSHA]
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	if m.o.Queue == nil || errors.Is(cause, git.ErrRejected) {
		return Outcome{ExitCode: 1, TimedOut: timedOut, Logs: logs}, nil
	}
	if ctx.Err() != nil && !timedOut {
		// Shutdown: not the mirror's failure, and not counted.
		return Outcome{}, fmt.Errorf("mirror %s: %w: interrupted", name, ErrRetryLater)
	}
	r, err := m.o.Queue.failed(job.Action.ID, name, sha, cause, m.o.Now())
	if err != nil {
		m.o.Log.Warn().Err(err).Msg("mirror queue not saved")
	}
	m.o.Log.Warn().Str("mirror", name).Str("sha", text.ShortSHA(sha)).Int("runs", r.Attempts).Time("next", r.Next).
		Msg("mirror push failed; it runs again later")
	return Outcome{}, fmt.Errorf("mirror %s: %w (failed runs: %d, next at %s): %w", name, ErrRetryLater, r.Attempts,
		r.Next.UTC().Format(time.RFC3339), cause)
}

// target is the mirror URL to push to: the configured one without its
// own credentials, with the action's secret as the password (and the
// URL's user name, else "disinto", as the user) when it declares one.
func (m *MirrorPusher) target(raw string, job Job) (string, error) {
	if len(job.Action.Secrets) == 0 {
		return git.StripCredentials(raw), nil
	}
	token := job.Secrets[job.Action.Secrets[0]]
	if token == "" {
		return "", fmt.Errorf("secret %s is empty", job.Action.Secrets[0])
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("mirror URL is not http(s), so a token cannot authenticate it")
	}
	user := "disinto"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, token)
	return u.String(), nil
}

// refused is the outcome of an action that can never run as given.
func refused(format string, args ...any) Outcome {
	return Outcome{ExitCode: -1, Logs: "refused before it ran: " + fmt.Sprintf(format, args...)}
}
