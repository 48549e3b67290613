package vault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Job is one run of an action, as the dispatcher hands it to an Executor.
type Job struct {
	// Action is the validated action; Content is its file as approved.
	Action  Action
	Content []byte
	// Formula is the text of formulas/<formula>.toml.
	Formula []byte
	// Secrets maps each declared secret name to its value: exactly the
	// declared ones, resolved by the dispatcher. The runner hands them to
	// the run and to nothing else; every value is registered with the
	// dispatcher's redactor before Run is called.
	Secrets map[string]string
	// Timeout bounds the run (the action's timeout_minutes).
	Timeout time.Duration
	// OpsCommit is the ops-repository commit the action was verified at.
	OpsCommit string
	// Tier is the action's blast radius as the dispatcher classified it;
	// Approver the administrator whose approval counted, "" when no human
	// saw it (a low-tier direct commit); Approval how it was approved.
	Tier     Tier
	Approver string
	Approval string
}

// Approved states who approved the job, for the run's own prompt and
// log: the tier, the approver or that no human did, and the ops commit.
func (j Job) Approved() string {
	tier := j.Tier.String()
	if tier == "" {
		tier = "unclassified"
	}
	who := "no human: " + tier + " tier by policy, committed directly by the vault identity"
	if j.Approver != "" {
		who = "the administrator " + j.Approver + " (" + j.Approval + ")"
	}
	return fmt.Sprintf("%s tier; approved by %s; action file at ops commit %s", tier, who, j.OpsCommit)
}

// Outcome is how a run ended.
type Outcome struct {
	// ExitCode is the run's exit status; 0 is success.
	ExitCode int
	// TimedOut reports that the run was stopped at Job.Timeout.
	TimedOut bool
	// Logs is the run's combined output, or its tail. The dispatcher
	// redacts it again before recording it.
	Logs string
	// Report is the run's structured result, validated by the runner
	// (a release's result object), recorded beside the logs; "" for none.
	Report string
}

// Executor runs one job in a short-lived, isolated environment (lib/runner:
// a container through the Docker API, with the declared secrets only, the
// timeout and resource limits). Run blocks until the run ended.
//
// Run returns an error only when nothing ran (the engine was unreachable,
// the image is missing): the dispatcher then withdraws its claim and
// tries again later. Once anything ran, whatever happened is an Outcome,
// and the action is never run again.
type Executor interface {
	Run(ctx context.Context, job Job) (Outcome, error)
}

// SecretSource resolves a secret by name (lib/secrets). A secret that is
// not stored is an error wrapping ErrSecretMissing.
type SecretSource interface {
	Get(name string) (string, error)
}

// ErrSecretMissing is the error of a SecretSource without the secret. An
// action whose secret is missing stays pending, not failed: the secret can
// be added.
var ErrSecretMissing = errors.New("secret not stored")

// RunnerScratch is the runner container's directory for what a run
// writes: the result file and the files a formula's *_file and *_dir
// variables name. Nothing in it outlives the run.
const RunnerScratch = "/tmp"

// runnerBuiltins are the variables the runner fills from the project and
// the run (agents/vault renders them so): an action need not give them.
var runnerBuiltins = map[string]bool{"project": true, "repo": true, "forge_api": true, "primary_branch": true, "result_file": true}

// RunnerFills reports whether the runner gives the formula variable name
// a value of its own when the action does not: the project's name, repo,
// API and primary branch, the result file, and a path in RunnerScratch
// for any variable named *_file or *_dir.
func RunnerFills(name string) bool {
	return runnerBuiltins[name] || strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_dir")
}

// ScratchVars returns the values the runner gives the *_file and *_dir
// variables of declared that vars leaves unset: RunnerScratch/<name>.
// result_file is the runner's own and not among them.
func ScratchVars(declared []string, vars map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		out[k] = v
	}
	for _, n := range declared {
		if _, ok := out[n]; ok || runnerBuiltins[n] || !RunnerFills(n) {
			continue
		}
		out[n] = RunnerScratch + "/" + n
	}
	return out
}
