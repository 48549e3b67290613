package agent

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
)

// Outcome codes of failed ticks the runtime assigns besides those of lib/ledger.
const (
	CodeTickTimeout      ledger.Code = "engine.tick_timeout"
	CodeForgeForbidden   ledger.Code = "forge.forbidden"
	CodeGitUnavailable   ledger.Code = "git.unavailable"
	CodeGitUnauthorized  ledger.Code = "git.unauthorized"
	CodeClaudeRateLimit  ledger.Code = "claude.rate_limited"
	CodeClaudeOverloaded ledger.Code = "claude.overloaded"
)

// Classify is the one place that decides what a failure means: its
// outcome code, and whether it is permanent (retrying cannot help until
// someone changes the configuration: a rejected token, a missing
// permission) or transient (the forge, the network or the model backend
// is down or busy, and backing off is right).
func Classify(err error) (code ledger.Code, permanent bool) {
	var c ledger.Coder
	var ge *git.Error
	var ne net.Error
	var ue *url.Error
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &c) && c.OutcomeCode().Validate() == nil:
		code := c.OutcomeCode()
		return code, permanentCodes[code]
	case errors.Is(err, forge.ErrUnauthorized):
		return ledger.CodeForgeUnauthorized, true
	case errors.Is(err, forge.ErrForbidden):
		return CodeForgeForbidden, true
	case errors.Is(err, forge.ErrUnavailable):
		return ledger.CodeForgeUnavailable, false
	case errors.Is(err, claude.ErrBudgetExhausted):
		return ledger.CodeBudgetExhausted, false
	case errors.Is(err, claude.ErrAuth):
		return ledger.CodeClaudeAuth, true
	case errors.Is(err, claude.ErrRateLimited):
		return CodeClaudeRateLimit, false
	case errors.Is(err, claude.ErrOverloaded):
		return CodeClaudeOverloaded, false
	case errors.As(err, &ge):
		return classifyGit(ge)
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTickTimeout, false
	case errors.As(err, &ue), errors.As(err, &ne):
		return ledger.CodeForgeUnavailable, false
	}
	return ledger.CodeEngineTick, false
}

// Unavailable reports whether err is a transient failure of the forge or
// of the network to it (the forge down or answering 5xx, git unable to
// connect, a request past its deadline), with its code. Work that meets
// one is retried without counting it against the issue or pull request
// at hand: nothing about them caused it.
func Unavailable(err error) (ledger.Code, bool) {
	code, permanent := Classify(err)
	if permanent {
		return "", false
	}
	switch code {
	case ledger.CodeForgeUnavailable, CodeGitUnavailable, CodeTickTimeout:
		return code, true
	}
	return "", false
}

var permanentCodes = map[ledger.Code]bool{
	ledger.CodeForgeUnauthorized: true, CodeForgeForbidden: true, ledger.CodeClaudeAuth: true, CodeGitUnauthorized: true,
}

// classifyGit reads git's own words: the network and the remote's
// authentication are what a tick can fail on that is not a bug.
func classifyGit(e *git.Error) (ledger.Code, bool) {
	s := strings.ToLower(e.Stderr)
	for _, w := range []string{"authentication failed", "returned error: 401", "returned error: 403", "could not read username"} {
		if strings.Contains(s, w) {
			return CodeGitUnauthorized, true
		}
	}
	for _, w := range []string{"could not resolve host", "failed to connect", "connection refused", "connection reset",
		"timed out", "returned error: 5", "unable to access", "early eof", "remote end hung up"} {
		if strings.Contains(s, w) {
			return CodeGitUnavailable, false
		}
	}
	if errors.Is(e.Err, context.DeadlineExceeded) {
		return CodeGitUnavailable, false
	}
	return ledger.CodeEngineTick, false
}

// TickError is a failed tick as Runtime.Tick returns it: classified once.
type TickError struct {
	Code      ledger.Code
	Permanent bool
	Err       error
}

func (e *TickError) Error() string { return e.Err.Error() }

// Unwrap returns the tick's error.
func (e *TickError) Unwrap() error { return e.Err }

// OutcomeCode implements ledger.Coder.
func (e *TickError) OutcomeCode() ledger.Code { return e.Code }

// Failing is a job whose ticks have failed since Since, Count times in a
// row, the last time with Code.
type Failing struct {
	Project   string      `json:"project"`
	Role      string      `json:"role"`
	Code      ledger.Code `json:"code"`
	Permanent bool        `json:"permanent,omitempty"`
	Count     int         `json:"count"`
	Since     time.Time   `json:"since"`
}

// streak is the run of failures of one job; the zero value is none.
type streak struct {
	code      ledger.Code
	permanent bool
	count     int
	since     time.Time
}

func streakKey(p *config.Project, role config.Role) string { return p.Name + "/" + string(role) }

// noteFailure counts a failed tick and reports whether it starts a streak
// (the first failure, or one of another kind than the last): only those
// are logged at error level.
func (rt *Runtime) noteFailure(p *config.Project, role config.Role, code ledger.Code, permanent bool) (first bool, count int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	k := streakKey(p, role)
	s := rt.streaks[k]
	if s.count == 0 || s.code != code {
		s = streak{code: code, permanent: permanent, since: rt.opts.Now()}
		first = true
	}
	s.count++
	rt.streaks[k] = s
	return first, s.count
}

// noteSuccess ends a job's streak and returns how long it was.
func (rt *Runtime) noteSuccess(p *config.Project, role config.Role) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	k := streakKey(p, role)
	n := rt.streaks[k].count
	delete(rt.streaks, k)
	return n
}

// Failing lists the jobs whose latest ticks failed, longest failing first.
func (rt *Runtime) Failing() []Failing {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]Failing, 0, len(rt.streaks))
	for k, s := range rt.streaks {
		project, role, _ := strings.Cut(k, "/")
		out = append(out, Failing{Project: project, Role: role, Code: s.code, Permanent: s.permanent, Count: s.count, Since: s.since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}
