package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

// vaultInterval is the dispatcher's polling floor (spec 70 §5.8): a
// merged vault pull request runs within a minute.
const vaultInterval = 60 * time.Second

// vaultAgent is the dispatcher of one project as a scheduled job.
type vaultAgent struct {
	project string
	d       *vault.Dispatcher
	running bool // a runner is wired: ticks run actions

	mu   sync.Mutex
	last []vault.Entry
	at   time.Time
}

var _ agent.Agent = (*vaultAgent)(nil)

// newVaultAgent builds project d.Project's dispatcher as the vault bot,
// with its own ops checkout under <data>/vault/<project>/ops and the data
// dir's secrets. Losing that directory is harmless: results are in the
// ops repository.
func newVaultAgent(d agentDeps) (agent.Agent, error) {
	s := d.Services
	v, err := vaultFor(d.Config, d.Project, filepath.Join(s.dataDir, "vault", d.Project.Name, "ops"), s.redactor, d.Log)
	if err != nil {
		return nil, err
	}
	container, err := newVaultRunner(d)
	if err != nil {
		return nil, err
	}
	run := vaultRunners(v, container, s.dataDir, d.Log)
	disp, err := v.dispatcher(run, s.instance, d.Log, secretSource{secrets.Open(s.dataDir)})
	if err != nil {
		return nil, err
	}
	return &vaultAgent{project: d.Project.Name, d: disp, running: run != nil}, nil
}

// Tick inspects the actions, or with a runner starts one dispatcher
// cycle as the runtime's background work: an action runs up to its own
// timeout (an hour by default), longer than a tick may take, and cycles
// never overlap (a tick while one runs starts nothing).
func (v *vaultAgent) Tick(ctx context.Context, run *agent.Run) error {
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
func (v *vaultAgent) keep(es []vault.Entry, err error) {
	if es == nil && err != nil {
		return
	}
	v.mu.Lock()
	v.last, v.at = es, time.Now()
	v.mu.Unlock()
}

// secretSource adapts the secret store to the dispatcher.
type secretSource struct{ s *secrets.Store }

// Get returns the secret, wrapping vault.ErrSecretMissing when it is not
// stored.
func (s secretSource) Get(name string) (string, error) {
	v, err := s.s.Get(name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", vault.ErrSecretMissing, err)
	}
	return v, err
}

// vaultStatus is one action in status.
type vaultStatus struct {
	Project string    `json:"project"`
	ID      string    `json:"id"`
	Tier    string    `json:"tier,omitempty"`
	State   string    `json:"state"`
	Detail  string    `json:"detail,omitempty"`
	Checked time.Time `json:"checked"`
}

// vaultAgents are the daemon's dispatchers.
type vaultAgents struct {
	mu     sync.Mutex
	agents []*vaultAgent
}

// status lists every project's actions as last seen.
func (va *vaultAgents) status() []vaultStatus {
	va.mu.Lock()
	defer va.mu.Unlock()
	out := []vaultStatus{}
	for _, v := range va.agents {
		v.mu.Lock()
		for _, e := range v.last {
			out = append(out, vaultStatus{Project: v.project, ID: e.ID, Tier: e.Tier.String(), State: entryState(e),
				Detail: mirrorLabel(e) + firstLine(entryDetail(e)), Checked: v.at})
		}
		v.mu.Unlock()
	}
	return out
}

// addVaultJobs schedules a dispatcher per project with an ops repository
// and a vault identity, every vaultInterval; a project without one is
// said once and left out.
func (a *app) addVaultJobs(d *daemon, registry map[config.Role]agentFactory) error {
	factory, ok := registry[config.RoleVault]
	if !ok {
		return nil
	}
	for _, p := range d.cfg.Projects {
		if p.OpsRepo == "" {
			continue
		}
		ag, err := d.newAgent(factory, p, config.RoleVault)
		if errors.Is(err, vault.ErrNoVaultIdentity) {
			d.log.Info().Str("project", p.Name).Msg("vault dispatcher not scheduled: no vault identity (FORGE_VAULT_TOKEN, FORGE_VAULT_PASS)")
			continue
		}
		if err != nil {
			return err
		}
		if va, ok := ag.(*vaultAgent); ok {
			d.vaults.mu.Lock()
			d.vaults.agents = append(d.vaults.agents, va)
			d.vaults.mu.Unlock()
			if !va.running {
				d.log.Warn().Str("project", p.Name).Msg("vault dispatcher inspects only: no Docker engine (DOCKER_HOST unset), so no action runs")
			}
		}
		j := jobFor(d.rt, ag, p, config.RoleVault, nil)
		j.Interval, j.FirstRun = vaultInterval, scheduler.FirstRunEveryStart
		if err := d.sched.Add(j); err != nil {
			return err
		}
	}
	return nil
}

// printVault prints the vault section of status.
func printVault(w io.Writer, vs []vaultStatus) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintln(w, "vault actions:")
	for _, v := range vs {
		fmt.Fprintf(w, "  %s/%s  %s  %s  %s\n", v.Project, v.ID, orDash(v.Tier), v.State, v.Detail)
	}
}

// opsAliasSuffix marks, in the webhook receiver's repository map, a
// project's ops repository: no project name contains it.
const opsAliasSuffix = "#ops"

// opsAlias is the name under which project's ops repository is given to
// the webhook receiver: its events wake the project's vault dispatcher
// and nothing else.
func opsAlias(project string) string { return project + opsAliasSuffix }

// vaultTrigger routes the ops repositories' events to the vault
// dispatchers (a merged vault pull request runs within seconds, the
// minute's poll is the floor) and every other event to next.
type vaultTrigger struct {
	sched interface {
		Trigger(project, role string) bool
	}
	next interface {
		Trigger(project, role string) bool
	}
}

// Trigger implements webhook.Triggerer.
func (t vaultTrigger) Trigger(project, role string) bool {
	if p, ok := strings.CutSuffix(project, opsAliasSuffix); ok {
		return t.sched.Trigger(p, string(config.RoleVault))
	}
	return t.next.Trigger(project, role)
}
