package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/agents/dev"
	agentvault "github.com/disinto/disinto/agents/vault"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/runner"
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

// vaultParts resolves d.Project's vault parts as the vault bot, on the
// daemon's one ops checkout of the project as that bot, which the
// dispatcher, the dev agents' mirror requests and the predictor share.
func vaultParts(d daemon.Deps) (*agentvault.Parts, error) {
	s := d.Services
	return agentvault.For(agentvault.PartsOptions{Config: d.Config, Project: d.Project,
		Dir: s.Layout.Ops(d.Project.Name, daemon.VaultUser(d.Config)), Checkouts: &s.Checkouts, Admins: daemon.Maintainers(d.Config.Env),
		Redactor: s.Redactor, Log: d.Log})
}

// newVaultAgent builds project d.Project's dispatcher as the vault bot,
// on the vault bot's ops checkout and with the data dir's secrets. Losing that directory is harmless: results are in the
// ops repository.
func newVaultAgent(d daemon.Deps) (agent.Agent, error) {
	s := d.Services
	v, err := vaultParts(d)
	if errors.Is(err, vault.ErrNoVaultIdentity) {
		return nil, fmt.Errorf("%w: %w (FORGE_VAULT_TOKEN, FORGE_VAULT_PASS)", daemon.ErrNotScheduled, err)
	}
	if err != nil {
		return nil, err
	}
	container, err := newVaultRunner(d)
	if err != nil {
		return nil, err
	}
	queue, err := vault.OpenMirrorQueue(s.Layout.MirrorQueue(d.Project.Name))
	if err != nil {
		return nil, fmt.Errorf("vault of project %s: %w", d.Project.Name, err)
	}
	run := agentvault.Runners(v, container, s.Layout.MirrorClone(d.Project.Name), queue, d.Log)
	disp, err := v.Dispatcher(run, s.Instance, agentvault.Secrets(secrets.Open(s.Layout.Root())), d.Log)
	if err != nil {
		return nil, err
	}
	if run == nil {
		d.Log.Warn().Str("project", d.Project.Name).Msg("vault dispatcher inspects only: no Docker engine (DOCKER_HOST unset), so no action runs")
	}
	return agentvault.New(d.Project.Name, disp, run != nil).WithMirrorQueue(queue), nil
}

// newVaultRunner returns the runner the vault actions of d.Project run in:
// lib/runner's ephemeral container on the engine DOCKER_HOST names (the
// opt-in socket override; the socket is root-equivalent, so it is never
// inferred). Without an engine there is none, and the dispatcher only
// inspects: status lists the pending and finished actions, nothing runs.
func newVaultRunner(d daemon.Deps) (vault.Executor, error) {
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
		if tags, err = agentvault.ReleaseTags(d.Project, b, d.Services.Redactor, d.Log); err != nil {
			return nil, err
		}
	}
	return agentvault.NewContainerRunner(agentvault.ContainerOptions{Runner: r, Project: d.Project,
		Network: strings.TrimSpace(d.Config.Env.Get(envRunnerNetwork)),
		Backend: d.Config.Backends[config.DefaultBackend], Tags: tags}), nil
}

// devMirrorVault is the dev agent's way to the mirror pushes of p: the
// vault's requester as the vault bot, on the vault bot's ops checkout. Nil (and a log line) when p has no
// mirrors, or no ops repository or vault identity: then no mirror is
// pushed, since no agent holds a mirror's credential.
func devMirrorVault(d daemon.Deps) dev.MirrorVault {
	p, s := d.Project, d.Services
	if len(p.Mirrors) == 0 {
		return nil
	}
	v, err := vaultParts(d)
	if err != nil {
		d.Log.Warn().Str("project", p.Name).Str("reason", s.Redactor.String(err.Error())).Msg("dev: mirrors are not pushed: they go through the vault")
		return nil
	}
	q, err := v.Requester(d.Log)
	if err != nil {
		return nil
	}
	return q
}

// mirrorNames maps each mirror of p to its URL without credentials: the
// dev agent only names mirrors in its requests, and a token a URL still
// carries (doctor warns of it) never reaches the agent.
func mirrorNames(p *config.Project) map[string]string {
	if len(p.Mirrors) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.Mirrors))
	for n, u := range p.Mirrors {
		out[n] = git.StripCredentials(u)
	}
	return out
}
