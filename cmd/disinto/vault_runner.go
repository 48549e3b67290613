package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
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
	tags, err := releaseTags(d)
	if err != nil {
		return nil, err
	}
	return &vaultRunner{r: r, project: d.Project, network: strings.TrimSpace(d.Config.Env.Get(envRunnerNetwork)),
		backend: d.Config.Backends[config.DefaultBackend], tags: tags}, nil
}

// vaultRunner runs the dispatcher's jobs in lib/runner's containers: the
// formula, rendered with the action's variables, becomes a bounded claude
// session in the runner image, with the action's secrets as files and the
// default backend's model credential.
type vaultRunner struct {
	r       jobRunner
	project *config.Project
	network string
	backend config.Backend
	// tags reads the project repository's tags, to confirm a release on
	// the forge itself (nil: not confirmed).
	tags tagReader
}

var _ vault.Runner = (*vaultRunner)(nil)

// jobRunner is what vaultRunner needs of *runner.Runner.
type jobRunner interface {
	Run(ctx context.Context, j runner.Job) (runner.Outcome, error)
}

// Run runs job and maps lib/runner's answer onto the dispatcher's
// contract: an error only when nothing ran (the engine failed before the
// container started), so the claim is withdrawn and the action tried
// again; anything that ran, or can never run as given, is an Outcome, so
// the action is never run twice.
func (v *vaultRunner) Run(ctx context.Context, job vault.Job) (vault.Outcome, error) {
	if job.Action.Formula == release.Formula {
		return v.releaseRun(ctx, job) // mechanical: the image's disinto runner-job release
	}
	rj, err := v.job(job)
	if err != nil {
		return vault.Outcome{ExitCode: -1, Logs: "refused before it ran: " + err.Error()}, nil
	}
	return v.outcome(ctx, rj)
}

// outcome runs rj and maps lib/runner's answer onto the dispatcher's
// contract (see Run).
func (v *vaultRunner) outcome(ctx context.Context, rj runner.Job) (vault.Outcome, error) {
	out, err := v.r.Run(ctx, rj)
	switch {
	case err == nil:
		return vault.Outcome{ExitCode: out.ExitCode, Logs: out.Log}, nil
	case errors.Is(err, runner.ErrTimeout):
		return vault.Outcome{ExitCode: out.ExitCode, TimedOut: true, Logs: out.Log}, nil
	case errors.Is(err, runner.ErrInvalidJob):
		return vault.Outcome{ExitCode: -1, Logs: "refused before it ran: " + err.Error()}, nil
	case !out.Started.IsZero():
		// It ran and was cut short (the daemon stopping): recorded as it
		// ended, never run again.
		return vault.Outcome{ExitCode: out.ExitCode, Logs: out.Log + "\n[the run was interrupted: " + err.Error() + "]"}, nil
	}
	return vault.Outcome{}, err
}

// job builds the runner job of a dispatcher job: the prompt, the secrets
// (the action's, plus the model credential), the network and the model.
func (v *vaultRunner) job(job vault.Job) (runner.Job, error) {
	prompt, err := v.prompt(job)
	if err != nil {
		return runner.Job{}, err
	}
	secrets := make(map[string]string, len(job.Secrets)+1)
	for k, val := range job.Secrets {
		secrets[k] = val
	}
	switch {
	case v.backend.APIKey != "":
		secrets["ANTHROPIC_API_KEY"] = v.backend.APIKey
	case v.backend.OAuthToken != "":
		secrets[config.OAuthTokenEnv] = v.backend.OAuthToken
	default:
		return runner.Job{}, errors.New("no model credential for the session (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN)")
	}
	env := map[string]string{}
	if v.backend.BaseURL != "" {
		env["ANTHROPIC_BASE_URL"] = v.backend.BaseURL
	}
	model := job.Action.Model
	if model == "" {
		model = v.backend.Model
	}
	return runner.Job{ID: job.Action.ID, Kind: runner.Reasoning, Script: prompt, Secrets: secrets, Env: env,
		Network: v.network, Timeout: job.Timeout, Model: model}, nil
}

// prompt renders the action's formula with its variables (the project's
// own fill project, repo, primary branch and the result file), then says
// what the run is and where its secrets are.
func (v *vaultRunner) prompt(job vault.Job) (string, error) {
	f, err := formula.Parse(job.Action.Formula+".toml", job.Formula)
	if err != nil {
		return "", err
	}
	body, err := formula.Render(f, formula.RenderInput{
		Role: string(config.RoleVault), Project: v.project.Name, Repo: v.project.Repo,
		ForgeAPI: v.project.ForgeURL + "/api/v1/repos/" + v.project.Repo, PrimaryBranch: v.project.PrimaryBranch,
		ResultFile: "/tmp/result.json", Vars: job.Action.Vars,
	})
	if err != nil {
		return "", fmt.Errorf("formula %s of action %s: %w", job.Action.Formula, job.Action.ID, err)
	}
	names := make([]string, 0, len(job.Action.Secrets))
	for _, n := range job.Action.Secrets {
		names = append(names, "/run/secrets/"+n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You run the vault action %q of the project %s, which an administrator approved as it stands below. Do what its formula says and nothing beyond it.\n\n",
		job.Action.ID, v.project.Name)
	b.WriteString(body)
	b.WriteString("\n\n## The run\n\n")
	b.WriteString("The approved action file (ops commit " + job.OpsCommit + "):\n\n```toml\n" + strings.TrimSpace(string(job.Content)) + "\n```\n\n")
	if len(names) > 0 {
		b.WriteString("Its secrets are files, one per name: " + strings.Join(names, ", ") + ". Read them where a step needs them; never print them.\n")
	} else {
		b.WriteString("It has no secrets.\n")
	}
	b.WriteString("Nothing of this container outlives the run: print the result object the formula asks for as the last line of your answer.\n")
	return b.String(), nil
}
