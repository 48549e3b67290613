// Package runner runs one approved vault action in an ephemeral container,
// started through the Docker engine API, and reports how it ended.
//
// A mechanical job runs its script with the image's /bin/sh; a reasoning
// job runs a claude -p session of the image's CLI on its prompt, with the
// factory's isolation flags and a turn limit.
//
// The container gets exactly what the job declares and nothing else: its
// script, its environment and its secrets. The secrets travel as a tar
// archive on the container's stdin and are unpacked by its first process
// into a tmpfs at /run/secrets (one 0400 file per secret, owned by the
// container user), so no value is in the image, in the container's
// configuration (docker inspect), in an environment variable, or on the
// host's disk. The container runs as an unprivileged user with every
// capability dropped, no-new-privileges, a read-only root (only /tmp and
// /run/secrets are writable, both tmpfs), memory, CPU and process limits,
// no mount from the host (so no Docker socket) and no network unless the
// job names one (never the host's). Its output is read from the attach
// stream, kept to a bounded tail and masked with every secret value; no
// log driver keeps a copy. The container is killed at the job's timeout
// and removed however the run ends: exit, timeout, cancellation or error.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// Engine is the part of the Docker engine API the runner uses;
// *client.Client from github.com/moby/moby/client implements it.
type Engine interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerWait(ctx context.Context, id string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerKill(ctx context.Context, id string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
}

var _ Engine = (*client.Client)(nil)

// Defaults of Options.
const (
	// DefaultImage is the runner image docker-compose.yml builds.
	DefaultImage = "disinto/runner:latest"
	// DefaultUID is the container user's uid and gid (the image's runner).
	DefaultUID = 1000
	// DefaultTimeout bounds a job that sets none (the action schema's
	// timeout_minutes default).
	DefaultTimeout = 60 * time.Minute
	// DefaultLogLimit is how many bytes of the log's tail an outcome keeps.
	DefaultLogLimit = 16 << 10
)

// DefaultLimits bound a job that sets none.
var DefaultLimits = Limits{Memory: 512 << 20, NanoCPUs: 1e9, Pids: 256, Tmp: 64 << 20}

// cleanupTimeout bounds each engine call made after a run, which must
// happen even when the caller's context is done.
const cleanupTimeout = 30 * time.Second

// logDrain is how long the output may keep flowing after the container
// exited before the stream is cut.
const logDrain = 10 * time.Second

// Options configure a Launcher.
type Options struct {
	// Engine is the Docker engine client. Required.
	Engine Engine
	// Image is the image jobs run in; DefaultImage when empty. It needs
	// /bin/sh and tar, and claude on PATH for reasoning jobs.
	Image string
	// UID and GID are the container user's ids; DefaultUID when zero.
	// Root is not a choice.
	UID, GID int
	// Timeout and Limits apply to jobs that set none; DefaultTimeout and
	// DefaultLimits field by field when zero.
	Timeout time.Duration
	Limits  Limits
	// LogLimit is how many bytes of log an outcome keeps; DefaultLogLimit
	// when zero.
	LogLimit int
	// Labels are set on every container besides the runner's own; Reap
	// removes only containers that carry all of them.
	Labels map[string]string
	// Log receives the runner's events.
	Log zerolog.Logger
	// Now is the clock for Outcome's times; time.Now when nil.
	Now func() time.Time
}

// Launcher starts jobs' containers on one engine. It is safe for concurrent
// use; each Run is independent.
type Launcher struct {
	engine   Engine
	image    string
	uid, gid int
	timeout  time.Duration
	limits   Limits
	logLimit int
	labels   map[string]string
	log      zerolog.Logger
	now      func() time.Time
}

// New checks o and returns a Launcher.
func New(o Options) (*Launcher, error) {
	if o.Engine == nil {
		return nil, fmt.Errorf("runner: no Docker engine client")
	}
	r := &Launcher{
		engine: o.Engine, image: o.Image, uid: o.UID, gid: o.GID,
		timeout: o.Timeout, limits: o.Limits.orDefault(DefaultLimits), logLimit: o.LogLimit,
		labels: maps.Clone(o.Labels), log: o.Log, now: o.Now,
	}
	if r.image == "" {
		r.image = DefaultImage
	}
	if r.uid == 0 {
		r.uid = DefaultUID
	}
	if r.gid == 0 {
		r.gid = DefaultUID
	}
	if r.uid < 0 || r.gid < 0 {
		return nil, fmt.Errorf("runner: uid %d, gid %d: want positive ids (never root)", r.uid, r.gid)
	}
	if r.timeout == 0 {
		r.timeout = DefaultTimeout
	}
	if r.logLimit == 0 {
		r.logLimit = DefaultLogLimit
	}
	if r.now == nil {
		r.now = time.Now
	}
	for k := range r.labels {
		if k == LabelRunner || k == LabelJob {
			return nil, fmt.Errorf("runner: label %s is the runner's own", k)
		}
	}
	return r, nil
}

// Run runs j in a fresh container and returns how it ended. A job that
// ran returns its Outcome and a nil error whatever its exit code, except:
// past its timeout it is killed and the error wraps ErrTimeout; when ctx
// ends first it is killed and the error wraps ctx's. Both come with the
// Outcome so far (log included). An invalid job wraps ErrInvalidJob, an
// engine failure ErrEngine; none of them leaves a container behind. A
// reasoning job's log ends with the session's stream-json events, its
// result event last.
func (r *Launcher) Run(ctx context.Context, j Job) (Outcome, error) {
	out := Outcome{ID: j.ID, ExitCode: -1}
	if j.Timeout == 0 {
		j.Timeout = r.timeout
	}
	j.Limits = j.Limits.orDefault(r.limits)
	if err := j.validate(); err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("runner job %q: %w", j.ID, err)
	}
	red := redact.New(slices.Collect(maps.Values(j.Secrets))...)
	archive, err := secretsArchive(j.Secrets, r.uid, r.gid)
	if err != nil {
		return out, fmt.Errorf("runner job %q: %s", j.ID, red.Error(err))
	}
	log := r.log.With().Str(logx.KeyRun, j.ID).Logger()
	created, err := r.engine.ContainerCreate(ctx, r.createOptions(j, containerName(j.ID)))
	if err != nil {
		return out, engineError(ctx, j.ID, "create container", err, red)
	}
	out.Container = created.ID
	defer r.remove(ctx, created.ID, log)
	err = r.execute(ctx, j, archive, red, &out)
	log.Info().Int("exit_code", out.ExitCode).Bool("timed_out", out.TimedOut).
		Dur(logx.KeyDuration, out.Ended.Sub(out.Started)).Msg("runner job ended")
	return out, err
}

// execute attaches to the created container out.Container, starts it,
// feeds it the secrets archive, and waits for it to exit, to time out or
// for ctx to end, filling out.
func (r *Launcher) execute(ctx context.Context, j Job, archive []byte, red *redact.Redactor, out *Outcome) error {
	id := out.Container
	// Attached before the start, so no output and no stdin byte is missed.
	attach, err := r.engine.ContainerAttach(ctx, id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return engineError(ctx, j.ID, "attach container", err, red)
	}
	var wg sync.WaitGroup
	// Closing the connection ends both goroutines below, whatever state
	// the container is in; they are waited for before Run returns.
	defer wg.Wait()
	defer attach.Close()
	tail := newLogTail(r.logLimit, j.Secrets)
	copied := make(chan struct{})
	wg.Go(func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(tail, tail, attach.Reader)
	})
	defer func() { out.Log, out.LogBytes = tail.text(red) }()

	if _, err := r.engine.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return engineError(ctx, j.ID, "start container", err, red)
	}
	out.Started = r.now()
	wg.Go(func() {
		// A failed write shows as the bootstrap's failure in the log and
		// exit code; the secrets are never retried elsewhere.
		if _, err := attach.Conn.Write(archive); err == nil {
			_ = attach.CloseWrite()
		}
	})

	runCtx, cancel := context.WithTimeout(ctx, j.Timeout)
	defer cancel()
	code, waitErr := r.wait(runCtx, id)
	if waitErr != nil && runCtx.Err() != nil {
		// Timed out or cancelled: kill, then collect the exit status.
		out.TimedOut = ctx.Err() == nil
		cctx, ccancel := cleanupContext(ctx)
		defer ccancel()
		if _, err := r.engine.ContainerKill(cctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			r.log.Warn().Str(logx.KeyRun, j.ID).Str("error", red.Error(err)).Msg("kill runner container")
		}
		code, _ = r.wait(cctx, id)
	}
	out.ExitCode = code
	out.Ended = r.now()
	select {
	case <-copied:
	case <-time.After(logDrain):
		// Something inherited the output and outlived the container's
		// first process: cut the stream.
	}
	switch {
	case out.TimedOut:
		return fmt.Errorf("runner job %q: %w after %s", j.ID, ErrTimeout, j.Timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("runner job %q: %w", j.ID, ctx.Err())
	case waitErr != nil:
		return engineError(ctx, j.ID, "wait for container", waitErr, red)
	}
	return nil
}

// wait blocks until container id is not running and returns its exit
// status (-1 when none came).
func (r *Launcher) wait(ctx context.Context, id string) (int, error) {
	w := r.engine.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-w.Result:
		if res.Error != nil && res.Error.Message != "" {
			return int(res.StatusCode), fmt.Errorf("%s", res.Error.Message)
		}
		return int(res.StatusCode), nil
	case err := <-w.Error:
		return -1, err
	}
}

// remove force-removes container id, with its anonymous volumes, even
// when ctx is done. A failure is logged: Reap catches what is left.
func (r *Launcher) remove(ctx context.Context, id string, log zerolog.Logger) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	_, err := r.engine.ContainerRemove(cctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		log.Error().Err(err).Str("container", id).Msg("remove runner container")
	}
}

// Reap removes every runner container that carries this runner's labels,
// running or not: what a crashed process left behind. Call it before the
// first Run, never while this runner's jobs run. It returns how many it
// removed.
func (r *Launcher) Reap(ctx context.Context) (int, error) {
	f := client.Filters{}.Add("label", LabelRunner+"=true")
	for k, v := range r.labels {
		f = f.Add("label", k+"="+v)
	}
	list, err := r.engine.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("list runner containers: %w: %w", ErrEngine, err)
	}
	n := 0
	for _, c := range list.Items {
		_, err := r.engine.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return n, fmt.Errorf("remove runner container %s: %w: %w", c.ID, ErrEngine, err)
		}
		n++
	}
	return n, nil
}

// cleanupContext outlives ctx's cancellation, with its own deadline.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// containerName is unique per run, so a leftover of an earlier run of the
// same job never blocks a new one.
func containerName(id string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "disinto-runner-" + id + "-" + hex.EncodeToString(b)
}

// engineError wraps an engine failure of operation op on job id in
// ErrEngine, its message masked; a failure because ctx ended wraps ctx's
// error instead.
func engineError(ctx context.Context, id, op string, err error, red *redact.Redactor) error {
	if ctx.Err() != nil {
		return fmt.Errorf("runner job %q: %s: %w", id, op, ctx.Err())
	}
	return fmt.Errorf("runner job %q: %s: %w: %s", id, op, ErrEngine, red.Error(err))
}
