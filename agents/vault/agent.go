package vault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/text"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// Interval is the dispatcher's polling floor (spec 70 §5.8): a merged
// vault pull request runs within a minute.
const Interval = 60 * time.Second

// Agent is the dispatcher of one project as a scheduled job.
type Agent struct {
	project string
	d       *vaultlib.Dispatcher
	running bool // a runner is wired: ticks run actions

	mu   sync.Mutex
	last []vaultlib.Entry
	at   time.Time

	mirrors *vaultlib.MirrorQueue // the mirror pushes waiting to run again
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// WithMirrorQueue makes status show the mirror pushes of q that failed
// and wait to run again.
func (v *Agent) WithMirrorQueue(q *vaultlib.MirrorQueue) *Agent {
	v.mirrors = q
	return v
}

// Report lists the mirror pushes that failed and wait to run again, with
// their failed runs, next try and last error (the actions themselves are
// in Status).
func (v *Agent) Report() agent.Report {
	var rep agent.Report
	if v.mirrors == nil {
		return rep
	}
	for _, r := range v.mirrors.List() {
		rep.Pending = append(rep.Pending, agent.Pending{Project: v.project, Role: string(config.RoleVault), What: "mirror push",
			Target: r.Mirror, Detail: r.SHA + " (vault action " + r.ID + "; disinto vault drop " + r.ID + " gives it up)",
			Queued: r.Queued, Attempts: r.Attempts, Next: r.Next, Error: r.Error})
	}
	return rep
}

// New makes the agent of project's dispatcher d; running says that d has
// a runner, so ticks run actions rather than only inspect them.
func New(project string, d *vaultlib.Dispatcher, running bool) *Agent {
	return &Agent{project: project, d: d, running: running}
}

// Running reports whether the agent's ticks run actions; without a
// runner they only inspect them.
func (v *Agent) Running() bool { return v.running }

// Tick inspects the actions, or with a runner starts one dispatcher
// cycle as the runtime's background work: an action runs up to its own
// timeout (an hour by default), longer than a tick may take, and cycles
// never overlap (a tick while one runs starts nothing).
func (v *Agent) Tick(ctx context.Context, run *agent.Run) error {
	if !v.running {
		es, err := v.d.Inspect(ctx)
		v.keep(es, err)
		return err
	}
	run.Go(ctx, "cycle", func(ctx context.Context) {
		es, err := v.d.Cycle(ctx)
		v.keep(es, err)
		if err != nil {
			run.Log.Warn().Err(err).Msg("vault dispatcher cycle")
		}
	})
	return nil
}

// keep remembers what a cycle saw, for status.
func (v *Agent) keep(es []vaultlib.Entry, err error) {
	if es == nil && err != nil {
		return
	}
	v.mu.Lock()
	v.last, v.at = es, time.Now()
	v.mu.Unlock()
}

// Status lists the project's actions as the last cycle saw them.
func (v *Agent) Status() []vaultlib.ActionStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]vaultlib.ActionStatus, 0, len(v.last))
	for _, e := range v.last {
		detail, _, _ := strings.Cut(e.Detail(), "\n")
		out = append(out, vaultlib.ActionStatus{Project: v.project, ID: e.ID, Tier: e.Tier.String(), State: e.Status(),
			Detail: MirrorLabel(e) + detail, Checked: v.at})
	}
	return out
}

// MirrorLabel says, in status, which mirror push an action is ("" for
// any other action): the pushes pending are the vault's pending
// mirror-push actions.
func MirrorLabel(e vaultlib.Entry) string {
	a := e.Action()
	if a.Formula != vaultlib.MirrorFormula {
		return ""
	}
	return "mirror push to " + a.Vars[vaultlib.MirrorVarName] + " of " + text.ShortSHA(a.Vars[vaultlib.MirrorVarSHA]) + ": "
}

// Secrets adapts the data dir's secret store to the dispatcher: a secret
// not stored is vaultlib.ErrSecretMissing.
func Secrets(s *secrets.Store) vaultlib.SecretSource { return secretSource{s} }

type secretSource struct{ s *secrets.Store }

// Get returns the secret, wrapping vaultlib.ErrSecretMissing when it is
// not stored.
func (s secretSource) Get(name string) (string, error) {
	v, err := s.s.Get(name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", vaultlib.ErrSecretMissing, err)
	}
	return v, err
}
