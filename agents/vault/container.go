package vault

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// ContainerOptions configure the container runner of one project.
type ContainerOptions struct {
	// Runner starts the containers: lib/runner on the engine.
	Runner  JobRunner
	Project *config.Project
	// Network is the Docker network an action's container joins (the
	// compose network, to reach the forge); empty, it has none.
	Network string
	// Backend is the model backend of reasoning actions' sessions.
	Backend config.Backend
	// Tags reads the project repository's tags, to confirm a release on
	// the forge itself (nil: not confirmed).
	Tags TagReader
}

// JobRunner is what the container runner needs of *runner.Launcher.
type JobRunner interface {
	Run(ctx context.Context, j runner.Job) (runner.Outcome, error)
}

// TagReader reads a tag of the project repository.
type TagReader func(ctx context.Context, name string) (forge.Tag, error)

// ContainerRunner runs the dispatcher's jobs in lib/runner's containers:
// the release formula as the image's mechanical release job; any other
// formula, rendered with the action's variables, as a bounded claude
// session in the runner image, with the action's secrets as files and the
// backend's model credential.
type ContainerRunner struct {
	o ContainerOptions
}

var _ vaultlib.Executor = (*ContainerRunner)(nil)

// NewContainerRunner returns the container runner of o.Project.
func NewContainerRunner(o ContainerOptions) *ContainerRunner { return &ContainerRunner{o: o} }

// Run runs job and maps lib/runner's answer onto the dispatcher's
// contract: an error only when nothing ran (the engine failed before the
// container started), so the claim is withdrawn and the action tried
// again; anything that ran, or can never run as given, is an Outcome, so
// the action is never run twice.
func (v *ContainerRunner) Run(ctx context.Context, job vaultlib.Job) (vaultlib.Outcome, error) {
	if job.Action.Formula == release.Formula {
		return v.releaseRun(ctx, job) // mechanical: the image's disinto runner-job release
	}
	rj, err := v.job(job)
	if err != nil {
		return vaultlib.Outcome{ExitCode: -1, Logs: "refused before it ran: " + err.Error()}, nil
	}
	return v.outcome(ctx, rj)
}

// outcome runs rj and maps lib/runner's answer onto the dispatcher's
// contract (see Run).
func (v *ContainerRunner) outcome(ctx context.Context, rj runner.Job) (vaultlib.Outcome, error) {
	out, err := v.o.Runner.Run(ctx, rj)
	switch {
	case err == nil:
		return vaultlib.Outcome{ExitCode: out.ExitCode, Logs: out.Log}, nil
	case errors.Is(err, runner.ErrTimeout):
		return vaultlib.Outcome{ExitCode: out.ExitCode, TimedOut: true, Logs: out.Log}, nil
	case errors.Is(err, runner.ErrInvalidJob):
		return vaultlib.Outcome{ExitCode: -1, Logs: "refused before it ran: " + err.Error()}, nil
	case !out.Started.IsZero():
		// It ran and was cut short (the daemon stopping): recorded as it
		// ended, never run again.
		return vaultlib.Outcome{ExitCode: out.ExitCode, Logs: out.Log + "\n[the run was interrupted: " + err.Error() + "]"}, nil
	}
	return vaultlib.Outcome{}, err
}

// job builds the runner job of a dispatcher job: the prompt, the secrets
// (the action's, plus the model credential), the network and the model.
func (v *ContainerRunner) job(job vaultlib.Job) (runner.Job, error) {
	prompt, err := v.prompt(job)
	if err != nil {
		return runner.Job{}, err
	}
	b := v.o.Backend
	secrets := make(map[string]string, len(job.Secrets)+1)
	for k, val := range job.Secrets {
		secrets[k] = val
	}
	switch {
	case b.APIKey != "":
		secrets["ANTHROPIC_API_KEY"] = b.APIKey
	case b.OAuthToken != "":
		secrets[config.OAuthTokenEnv] = b.OAuthToken
	default:
		return runner.Job{}, errors.New("no model credential for the session (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN)")
	}
	env := map[string]string{}
	if b.BaseURL != "" {
		env["ANTHROPIC_BASE_URL"] = b.BaseURL
	}
	model := job.Action.Model
	if model == "" {
		model = b.Model
	}
	return runner.Job{ID: job.Action.ID, Kind: runner.Reasoning, Script: prompt, Secrets: secrets, Env: env,
		Network: v.o.Network, Timeout: job.Timeout, Model: model}, nil
}

// prompt renders the action's formula with its variables (the project's
// own fill project, repo, primary branch and the result file; *_file and
// *_dir variables get a path in the scratch directory), then says
// what the run is and where its secrets are.
func (v *ContainerRunner) prompt(job vaultlib.Job) (string, error) {
	p := v.o.Project
	f, err := formula.Parse(job.Action.Formula+".toml", job.Formula)
	if err != nil {
		return "", err
	}
	declared := make([]string, 0, len(f.Vars))
	for _, fv := range f.Vars {
		declared = append(declared, fv.Name)
	}
	body, err := formula.Render(f, formula.RenderInput{
		Role: string(config.RoleVault), Project: p.Name, Repo: p.Repo,
		ForgeAPI: p.ForgeURL + "/api/v1/repos/" + p.Repo, PrimaryBranch: p.PrimaryBranch,
		ResultFile: vaultlib.RunnerScratch + "/result.json", Vars: vaultlib.ScratchVars(declared, job.Action.Vars),
	})
	if err != nil {
		return "", fmt.Errorf("formula %s of action %s: %w", job.Action.Formula, job.Action.ID, err)
	}
	names := make([]string, 0, len(job.Action.Secrets))
	for _, n := range job.Action.Secrets {
		names = append(names, "/run/secrets/"+n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You run the vault action %q of the project %s as it stands below: %s. Do what its formula says and nothing beyond it.\n\n",
		job.Action.ID, p.Name, job.Approved())
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

// releaseRun runs a release action as lib/release's mechanical job: the
// image's disinto runner-job release with the action's secrets (no model
// credential), then its result line checked against the job. A result
// that is missing or does not describe this release fails the run,
// whatever the exit status.
func (v *ContainerRunner) releaseRun(ctx context.Context, job vaultlib.Job) (vaultlib.Outcome, error) {
	p := v.o.Project
	plan, err := release.Plan(job.Action, release.Target{ForgeURL: p.ForgeURL, Repo: p.Repo, Mirrors: p.Mirrors})
	if err != nil {
		return vaultlib.Outcome{ExitCode: -1, Logs: "refused before it ran: " + err.Error()}, nil
	}
	rj := runner.Job{ID: job.Action.ID, Kind: runner.Mechanical, Script: plan.Script, Env: plan.Env,
		Secrets: job.Secrets, Network: v.o.Network, Timeout: job.Timeout}
	out, err := v.outcome(ctx, rj)
	if err != nil || out.TimedOut {
		return out, err
	}
	res, perr := release.ParseResult(out.Logs, plan)
	switch {
	case perr != nil:
		out.Logs += "\n[" + perr.Error() + "]"
		if out.ExitCode == 0 {
			out.ExitCode = 1
		}
	case !res.Succeeded() && out.ExitCode == 0:
		out.ExitCode = 1
	}
	if perr == nil {
		out.Report = res.JSON()
	}
	if perr == nil && res.Succeeded() && v.o.Tags != nil {
		v.confirm(ctx, plan, &out)
	}
	return out, nil
}

// confirm checks on the forge, not in the job's word, that the tag is on
// the released commit: a tag missing or elsewhere fails the run. A forge
// that does not answer is noted in the log and decides nothing.
func (v *ContainerRunner) confirm(ctx context.Context, plan release.Job, out *vaultlib.Outcome) {
	t, err := v.o.Tags(ctx, plan.Version)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		out.Logs += "\n[the forge has no tag " + plan.Version + ", though the job reported one]"
		out.ExitCode = max(out.ExitCode, 1)
	case err != nil:
		out.Logs += "\n[the tag was not confirmed on the forge: " + err.Error() + "]"
	case t.SHA != plan.SHA:
		out.Logs += fmt.Sprintf("\n[the forge's tag %s is at %s, not %s]", plan.Version, t.SHA, plan.SHA)
		out.ExitCode = max(out.ExitCode, 1)
	default:
		out.Logs += fmt.Sprintf("\n[confirmed on the forge: %s at %s]", plan.Version, plan.SHA)
	}
}

// ReleaseTags reads the tags of p's repository as the vault bot b, which
// the dispatcher runs as (nil when it has no token: then there is no
// dispatcher either).
func ReleaseTags(p *config.Project, b config.Bot, red *redact.Redactor, log zerolog.Logger) (TagReader, error) {
	if b.Token == "" {
		return nil, nil
	}
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, Logger: log, Redactor: red})
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(p.Repo, "/")
	return fc.Repo(owner, name).GetTag, nil
}
