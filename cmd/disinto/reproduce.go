package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/agents/reproduce"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/runner"
)

// Variables of the reproduce sidecars.
const (
	// envReproduceImage names the reproduce image (docker/reproduce;
	// defaultReproduceImage when unset).
	envReproduceImage = "DISINTO_REPRODUCE_IMAGE"
	// envReproduceNetwork names the Docker network a sidecar joins, the
	// one the project's stack is reachable on; unset, the runner's
	// network (DISINTO_RUNNER_NETWORK) is used, and without either it has
	// none.
	envReproduceNetwork = "DISINTO_REPRODUCE_NETWORK"
)

// defaultReproduceImage is the reproduce image's name when none is set.
const defaultReproduceImage = "disinto/reproduce:latest"

// reproduceLogLimit is how much of a sidecar's output is kept: enough for
// the session's events and its screenshots, which leave the container in
// its output.
const reproduceLogLimit = 48 << 20

// newReproduceAgent builds the bug-report track of one project, acting as
// reproduce-bot (dev-bot without a token of its own): its sidecars run on
// the engine DOCKER_HOST names, in the reproduce image, with the default
// backend's model credential. Without an engine the agent only lists the
// bug reports due, for status.
func newReproduceAgent(d daemon.Deps) (agent.Agent, error) {
	b, err := d.Config.Bot(config.RoleReproduce)
	if err != nil {
		return nil, fmt.Errorf("reproduce bot: %w", err)
	}
	fc, err := d.Services.ForgeAs(d.Project, b, d.Log)
	if err != nil {
		return nil, err
	}
	p, env := d.Project, d.Config.Env
	o := reproduce.Options{
		Project: p.Name, Repo: p.Repo, Bot: b.User, Forge: fc,
		Formulas: func(name string) (*formula.Formula, error) { return d.Services.Formula(p, name, d.Log) },
		StateDir: d.StateDir, LockDir: d.Services.Layout.Locks(),
		Model: p.Roles[config.RoleReproduce].Model, Redactor: d.Services.Redactor, Log: d.Log,
	}
	if eng := dockerEngine(env); eng != nil {
		image := strings.TrimSpace(env.Get(envReproduceImage))
		if image == "" {
			image = defaultReproduceImage
		}
		r, err := runner.New(runner.Options{Engine: eng.Client(), Image: image, LogLimit: reproduceLogLimit,
			Labels: map[string]string{"org.disinto.project": p.Name, "org.disinto.role": string(config.RoleReproduce)}, Log: d.Log})
		if err != nil {
			return nil, fmt.Errorf("reproduce runner of project %s: %w", p.Name, err)
		}
		o.Network = strings.TrimSpace(env.Get(envReproduceNetwork))
		if o.Network == "" {
			o.Network = strings.TrimSpace(env.Get(envRunnerNetwork))
		}
		o.Secrets, o.Env, err = sidecarCredential(d.Config.Backends[config.DefaultBackend])
		if err != nil {
			// Said once at start; the bug reports are still listed.
			d.Log.Warn().Err(err).Msg("reproduce sidecars cannot run")
		} else {
			o.Sidecars = r
		}
	}
	return reproduce.New(o)
}

// sidecarCredential is a sidecar's model credential (a secret file) and
// its base URL (environment) from backend.
func sidecarCredential(backend config.Backend) (map[string]string, map[string]string, error) {
	secrets, env := map[string]string{}, map[string]string{}
	switch {
	case backend.APIKey != "":
		secrets["ANTHROPIC_API_KEY"] = backend.APIKey
	case backend.OAuthToken != "":
		secrets[config.OAuthTokenEnv] = backend.OAuthToken
	default:
		return nil, nil, errors.New("no model credential for the sessions (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN)")
	}
	if backend.BaseURL != "" {
		env["ANTHROPIC_BASE_URL"] = backend.BaseURL
	}
	return secrets, env, nil
}
