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
	Log      zerolog.Logger
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
// (an unknown mirror, a bad commit id) is an Outcome, recorded once; so
// is a push that failed every attempt. Only a fetch that found no
// forge to fetch from is an error: nothing was pushed, and the
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
		if err == nil {
			err = r.PushMirror(ctx, target, sha+":refs/heads/"+m.o.Primary)
		}
		if err == nil {
			fmt.Fprintf(&logs, "pushed %s to %s as %s (attempt %d)\n", text.ShortSHA(sha), name, m.o.Primary, attempt)
			return Outcome{Logs: logs.String()}, nil
		}
		fmt.Fprintf(&logs, "attempt %d: %v\n", attempt, err)
		if attempt >= m.o.Attempts || errors.Is(err, git.ErrRejected) || ctx.Err() != nil {
			return Outcome{ExitCode: 1, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded), Logs: logs.String()}, nil
		}
		m.o.Log.Warn().Str("mirror", name).Int("attempt", attempt).Msg("mirror push failed; trying again")
		select {
		case <-ctx.Done():
			return Outcome{ExitCode: 1, Logs: logs.String()}, nil
		case <-time.After(wait):
		}
		wait *= 2
	}
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
