// Package agent is the contract between the daemon and the agents, and the
// runtime that enforces it.
//
// The scheduler calls Runtime.Tick for one (project, role) pair; the runtime
// checks that the role is not paused, calls the Agent's Tick with a Run,
// recovers a panic, and turns a failed tick into an engine-error ledger
// record. An Agent's Tick does one pass (poll the forge, claim, start work)
// and returns quickly. Long work, such as a dev session that may last an
// hour, is handed to Run.Go: it runs in a goroutine the runtime tracks, keyed
// so that one issue never has two sessions at once, with the jobs context of
// the daemon's two-phase shutdown. Outcomes are reported with Run.Record,
// one terminal ledger record per unit of work.
package agent

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/ledger"
)

// Agent is one role's logic for one project. Constructors in cmd build one
// Agent per (project, role).
//
// Tick is called at most once at a time per Agent (the scheduler never
// overlaps runs of one job) but Agents of different projects run
// concurrently. Tick must:
//   - return quickly: anything that may take minutes goes to run.Go;
//   - honour ctx: when it is cancelled the daemon is shutting down for good,
//     so leave recoverable state (the forge is the source of truth) and
//     return;
//   - report each finished unit of work with run.Record; a tick that found
//     nothing to do records nothing;
//   - return an error only when the pass itself failed (forge unreachable,
//     bad credentials). The runtime records it as engine-error with the
//     error's ledger.Coder code, or engine.tick_failed.
type Agent interface {
	Tick(ctx context.Context, run *Run) error
}

// Cause says why a tick runs.
type Cause string

// Causes of a tick.
const (
	CauseSchedule Cause = "schedule"
	CauseEvent    Cause = "event"
	CauseManual   Cause = "manual"
)

// Run is the context of one tick, handed to Agent.Tick.
type Run struct {
	// ID identifies the tick in logs and the ledger.
	ID      string
	Project *config.Project
	Role    config.Role
	Cause   Cause
	Start   time.Time
	// Log carries the agent, project and run keys.
	Log zerolog.Logger

	rt *Runtime
	// workCtx is the context Runtime.Tick was given: background work runs
	// under it, not under the tick's own deadline.
	workCtx context.Context
}

// Record appends a terminal record of finished work to the ledger. Project,
// Role, Run and End default to the run's values and the current time; Start
// defaults to the tick's start. The record is validated: a failure reason
// without a dotted code is rejected.
func (r *Run) Record(rec ledger.Record) error {
	if rec.Project == "" {
		rec.Project = r.Project.Name
	}
	if rec.Role == "" {
		rec.Role = string(r.Role)
	}
	if rec.Run == "" {
		rec.Run = r.ID
	}
	if rec.Start.IsZero() {
		rec.Start = r.Start
	}
	return r.rt.record(rec)
}

// Go runs fn in a goroutine tracked by the runtime, so the daemon waits for
// it on shutdown. fn receives the context Runtime.Tick was given (the
// daemon's jobs context), without the tick's deadline; ctx is used only
// for a Run that no Runtime.Tick made. key scopes "no overlap" to a unit of work (for example
// "issue-42"): if work with the same project, role and key is still running,
// Go does nothing and returns false. fn gets a context that is cancelled in
// the second phase of shutdown; a panic in fn is recovered and recorded as
// engine-error with code engine.panic. The Run stays valid inside fn.
func (r *Run) Go(ctx context.Context, key string, fn func(ctx context.Context)) bool {
	return r.rt.spawn(ctx, r, key, fn)
}

// Busy reports whether work with key of the run's project and role is
// running. Work started by Go counts from the moment Go returns true until
// fn returns, so an agent needs no record of its own of what runs.
func (r *Run) Busy(key string) bool {
	return r.rt.Busy(r.Project.Name, r.Role, key)
}

// Logger returns the run's logger: every line carries the agent, project
// and run keys. Background work logs through the Run that started it.
func (r *Run) Logger() zerolog.Logger { return r.Log }
