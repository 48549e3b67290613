package runner

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Kind says how a job's formula is executed.
type Kind string

const (
	// Mechanical jobs run their script with /bin/sh -c inside the image.
	Mechanical Kind = "mechanical"
	// Reasoning jobs run a bounded claude -p session (the image's claude)
	// with their script as the prompt.
	Reasoning Kind = "reasoning"
)

// Validate reports whether k is a known kind.
func (k Kind) Validate() error {
	switch k {
	case Mechanical, Reasoning:
		return nil
	}
	return fmt.Errorf("unknown kind %q (want %q or %q)", string(k), Mechanical, Reasoning)
}

// Job is one approved action to run in an ephemeral container.
type Job struct {
	// ID names the action; it labels and names the container. Lower-case
	// letters, digits, '.', '_' and '-', at most 63 characters.
	ID string
	// Kind is how Script is executed.
	Kind Kind
	// Script is the shell script of a mechanical job, or the prompt (the
	// rendered formula and action) of a reasoning job.
	Script string
	// Secrets are the action's declared secrets, name → value, already
	// decrypted by the caller. Each becomes the file /run/secrets/NAME
	// (mode 0400, owned by the container user) and nothing else: no
	// environment variable, nothing in the container's configuration.
	// Every value is masked in the outcome's log; values shorter than six
	// characters cannot be masked safely and are refused. A reasoning
	// job's model credential is one of them (ANTHROPIC_API_KEY,
	// ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN): that one alone is
	// also exported to claude's environment, where the CLI reads it.
	Secrets map[string]string
	// Env is extra environment for the script. It is visible in the
	// container's configuration (docker inspect): never put a secret here.
	Env map[string]string
	// Network is the Docker network to attach the container to (the
	// compose network, to reach the forge). Empty means none: no network
	// at all. The host's network and another container's are refused.
	Network string
	// Timeout bounds the run; past it the container is killed. Zero takes
	// the runner's default.
	Timeout time.Duration
	// MaxTurns bounds a reasoning session's agentic turns (--max-turns);
	// zero takes DefaultMaxTurns. Model, when set, is its --model.
	MaxTurns int
	Model    string
	// Limits bound the container's resources; zero fields take the
	// runner's defaults.
	Limits Limits
}

// Limits bound a container's resources.
type Limits struct {
	// Memory is the memory limit in bytes (swap is not allowed on top).
	Memory int64
	// NanoCPUs is the CPU quota in units of 1e-9 CPUs (1e9 = one CPU).
	NanoCPUs int64
	// Pids is the most processes and threads the container may hold.
	Pids int64
	// Tmp is the size in bytes of the writable /tmp (also the job's home),
	// counted against Memory.
	Tmp int64
}

// orDefault returns l with every zero field taken from d.
func (l Limits) orDefault(d Limits) Limits {
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.NanoCPUs == 0 {
		l.NanoCPUs = d.NanoCPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.Tmp == 0 {
		l.Tmp = d.Tmp
	}
	return l
}

// Outcome is what came of a job that got a container.
type Outcome struct {
	// ID is the job's id; Container the id of the container it ran in
	// (removed by the time Run returns).
	ID, Container string
	// ExitCode is the script's exit status; -1 when the container never
	// reported one.
	ExitCode int
	// TimedOut is set when the job ran past its timeout and was killed.
	TimedOut bool
	// Log is the tail of the combined stdout and stderr, every secret
	// masked, at most the runner's log limit in bytes. The two streams
	// interleave in the order the engine delivered them, which is only
	// roughly the order they were written in.
	Log string
	// LogBytes is how much the job wrote in all; more than len(Log) means
	// the log was cut to its tail.
	LogBytes int64
	// Started and Ended bound the run (container start to exit).
	Started, Ended time.Time
}

var (
	// ErrInvalidJob marks a job that cannot be run as given (see JobError).
	ErrInvalidJob = errors.New("invalid runner job")
	// ErrTimeout marks a job killed because it ran past its timeout.
	ErrTimeout = errors.New("runner job timed out")
	// ErrEngine marks a failure of the Docker engine or its API.
	ErrEngine = errors.New("docker engine")
)

// JobError says which field of a job is wrong. It wraps ErrInvalidJob.
type JobError struct {
	ID, Field, Reason string
}

// Error names the job and the field.
func (e *JobError) Error() string {
	return fmt.Sprintf("runner job %q: %s: %s", e.ID, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidJob) hold.
func (e *JobError) Unwrap() error { return ErrInvalidJob }

var (
	// idPattern is what a job id may look like: it is part of a container
	// name and a label value.
	idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	// namePattern is what secret and environment names may look like;
	// secret names are also file names.
	namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	// networkPattern is what a Docker network name may look like.
	networkPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	// modelPattern is what a model name may look like.
	modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$`)
)

// minSecretLen is the shortest secret value the redactor masks (lib/redact
// ignores shorter ones, which would mask ordinary text everywhere).
const minSecretLen = 6

// maxScript bounds a job's script: it travels in the container's command.
const maxScript = 256 << 10

// validate checks j field by field, with its defaults already applied.
func (j Job) validate() error {
	bad := func(field, format string, args ...any) error {
		return &JobError{ID: j.ID, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !idPattern.MatchString(j.ID) {
		return bad("id", "want lower-case letters, digits, '.', '_' or '-', at most 63")
	}
	if err := j.Kind.Validate(); err != nil {
		return bad("kind", "%v", err)
	}
	if strings.TrimSpace(j.Script) == "" {
		return bad("script", "empty")
	}
	if len(j.Script) > maxScript {
		return bad("script", "%d bytes, more than %d", len(j.Script), maxScript)
	}
	if strings.ContainsRune(j.Script, 0) {
		return bad("script", "contains a NUL byte")
	}
	for name, value := range j.Secrets {
		if !namePattern.MatchString(name) {
			return bad("secrets", "name %q: want letters, digits and '_'", name)
		}
		if len(strings.TrimSpace(value)) < minSecretLen {
			return bad("secrets", "%s: value shorter than %d characters cannot be masked in logs", name, minSecretLen)
		}
	}
	for name, value := range j.Env {
		if !namePattern.MatchString(name) {
			return bad("env", "name %q: want letters, digits and '_'", name)
		}
		if _, ok := j.Secrets[name]; ok {
			return bad("env", "%s is also a secret: secrets go in files only", name)
		}
		if slices.Contains(modelCredentials, name) {
			return bad("env", "%s is a credential: declare it as a secret", name)
		}
		if isRunnerEnv(name) {
			return bad("env", "%s is set by the runner", name)
		}
		if strings.HasPrefix(name, reservedEnvPrefix) {
			return bad("env", "%s: the %s prefix is the runner's", name, reservedEnvPrefix)
		}
		if strings.ContainsRune(value, 0) {
			return bad("env", "%s: value contains a NUL byte", name)
		}
	}
	if err := checkNetwork(j.Network); err != nil {
		return bad("network", "%v", err)
	}
	if j.MaxTurns < 0 || j.MaxTurns > maxTurns {
		return bad("max_turns", "%d, want 1 to %d", j.MaxTurns, maxTurns)
	}
	if j.Model != "" && !modelPattern.MatchString(j.Model) {
		return bad("model", "%q is not a model name", j.Model)
	}
	if j.Timeout <= 0 {
		return bad("timeout", "must be positive, got %s", j.Timeout)
	}
	l := j.Limits
	if l.Memory < minMemory {
		return bad("limits.memory", "%d bytes, want at least %d", l.Memory, minMemory)
	}
	if l.NanoCPUs <= 0 || l.Pids <= 0 || l.Tmp <= 0 {
		return bad("limits", "cpu, pids and tmp must be positive, got %+v", l)
	}
	return nil
}

// maxTurns bounds MaxTurns.
const maxTurns = 500

// minMemory is the smallest memory limit the engine accepts (6 MiB).
const minMemory = 6 << 20

// checkNetwork refuses the network modes that would undo the isolation:
// the host's stack, or another container's.
func checkNetwork(n string) error {
	switch {
	case n == "" || n == "none":
		return nil
	case n == "host":
		return errors.New("the host network is refused")
	case strings.HasPrefix(n, "container:"):
		return errors.New("another container's network is refused")
	case !networkPattern.MatchString(n):
		return fmt.Errorf("%q is not a network name", n)
	}
	return nil
}
