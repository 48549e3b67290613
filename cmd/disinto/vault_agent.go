package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	agentvault "github.com/disinto/disinto/agents/vault"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

// Variables of the vault runner.
const (
	// envRunnerImage names the runner image (runner.DefaultImage, which
	// docker-compose.yml builds, when unset).
	envRunnerImage = "DISINTO_RUNNER_IMAGE"
	// envRunnerNetwork names the Docker network an action's container
	// joins (the compose network, to reach the forge); unset, it has none.
	envRunnerNetwork = "DISINTO_RUNNER_NETWORK"
)

// vaultParts resolves d.Project's vault parts as the vault bot, with an
// ops checkout of the caller's own under <data>/vault/<project>/<name>.
func (d agentDeps) vaultParts(name string) (*agentvault.Parts, error) {
	s := d.Services
	return agentvault.For(agentvault.PartsOptions{Config: d.Config, Project: d.Project,
		Dir: filepath.Join(s.dataDir, "vault", d.Project.Name, name), Admins: maintainers(d.Config.Env),
		Redactor: s.redactor, Log: d.Log})
}

// newVaultAgent builds project d.Project's dispatcher as the vault bot,
// with its own ops checkout under <data>/vault/<project>/ops and the data
// dir's secrets. Losing that directory is harmless: results are in the
// ops repository.
func newVaultAgent(d agentDeps) (agent.Agent, error) {
	s := d.Services
	v, err := d.vaultParts("ops")
	if err != nil {
		return nil, err
	}
	container, err := newVaultRunner(d)
	if err != nil {
		return nil, err
	}
	run := agentvault.Runners(v, container, filepath.Join(s.dataDir, "vault", d.Project.Name, "mirror-clone"), d.Log)
	disp, err := v.Dispatcher(run, s.instance, agentvault.Secrets(secrets.Open(s.dataDir)), d.Log)
	if err != nil {
		return nil, err
	}
	return agentvault.New(d.Project.Name, disp, run != nil), nil
}

// newVaultRunner returns the runner the vault actions of d.Project run in:
// lib/runner's ephemeral container on the engine DOCKER_HOST names (the
// opt-in socket override; the socket is root-equivalent, so it is never
// inferred). Without an engine there is none, and the dispatcher only
// inspects: status lists the pending and finished actions, nothing runs.
func newVaultRunner(d agentDeps) (vault.Runner, error) {
	eng := dockerEngine(d.Config.Env)
	if eng == nil {
		return nil, nil
	}
	r, err := runner.New(runner.Options{
		Engine: eng.Client(), Image: strings.TrimSpace(d.Config.Env.Get(envRunnerImage)),
		Labels: map[string]string{"org.disinto.project": d.Project.Name},
		Log:    d.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("vault runner of project %s: %w", d.Project.Name, err)
	}
	var tags agentvault.TagReader
	if b, err := d.Config.Bot(config.RoleVault); err == nil {
		if tags, err = agentvault.ReleaseTags(d.Project, b, d.Services.redactor, d.Log); err != nil {
			return nil, err
		}
	}
	return agentvault.NewContainerRunner(agentvault.ContainerOptions{Runner: r, Project: d.Project,
		Network: strings.TrimSpace(d.Config.Env.Get(envRunnerNetwork)),
		Backend: d.Config.Backends[config.DefaultBackend], Tags: tags}), nil
}

// vaultAgents are the daemon's dispatchers.
type vaultAgents struct {
	mu     sync.Mutex
	agents []*agentvault.Agent
}

// status lists every project's actions as last seen.
func (va *vaultAgents) status() []agentvault.Status {
	va.mu.Lock()
	defer va.mu.Unlock()
	out := []agentvault.Status{}
	for _, v := range va.agents {
		out = append(out, v.Status()...)
	}
	return out
}

// addVaultJobs schedules a dispatcher per project with an ops repository
// and a vault identity, every agentvault.Interval; a project without one
// is said once and left out.
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
		if va, ok := ag.(*agentvault.Agent); ok {
			d.vaults.mu.Lock()
			d.vaults.agents = append(d.vaults.agents, va)
			d.vaults.mu.Unlock()
			if !va.Running() {
				d.log.Warn().Str("project", p.Name).Msg("vault dispatcher inspects only: no Docker engine (DOCKER_HOST unset), so no action runs")
			}
		}
		j := jobFor(d.rt, ag, p, config.RoleVault, nil)
		j.Interval, j.FirstRun = agentvault.Interval, scheduler.FirstRunEveryStart
		if err := d.sched.Add(j); err != nil {
			return err
		}
	}
	return nil
}

// printVault prints the vault section of status.
func printVault(w io.Writer, vs []agentvault.Status) {
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
