package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/text"
)

// Recorder stores terminal run records; *ledger.Ledger implements it.
type Recorder interface {
	Append(ledger.Record) error
}

// Options configures a Runtime.
type Options struct {
	Ledger Recorder
	// Enablement tells paused roles; nil means everything is enabled.
	Enablement *Enablement
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log zerolog.Logger
	// OnTick, if set, observes every tick (metrics).
	OnTick func(project string, role config.Role, d time.Duration, err error)
	// TickTimeout bounds one tick (not the work it starts); a tick past
	// it is cancelled and recorded as engine.tick_timeout. Zero means no
	// bound.
	TickTimeout time.Duration
	// StallAfter is how long running work may make no progress before its
	// heartbeat says it is stalled; default DefaultStallAfter.
	StallAfter time.Duration
}

// Runtime runs ticks and tracks the background work they spawn.
// It is safe for concurrent use.
type Runtime struct {
	opts Options
	seq  atomic.Int64
	wg   sync.WaitGroup

	mu      sync.Mutex
	work    map[string]Work   // by project/role/key
	streaks map[string]streak // by project/role: failures in a row
	beats   map[string]*Heartbeat
}

// Work describes one piece of background work in flight.
type Work struct {
	Project string    `json:"project"`
	Role    string    `json:"role"`
	Key     string    `json:"key"`
	Run     string    `json:"run"`
	Since   time.Time `json:"since"`
}

// New returns a Runtime.
func New(opts Options) *Runtime {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StallAfter <= 0 {
		opts.StallAfter = DefaultStallAfter
	}
	return &Runtime{opts: opts, work: map[string]Work{}, streaks: map[string]streak{}, beats: map[string]*Heartbeat{}}
}

// ErrPaused is returned by Tick when the role is paused for the project.
var ErrPaused = errors.New("agent paused")

// Tick runs one pass of a for project p. It returns ErrPaused (wrapped)
// when the role is paused, the tick's error otherwise; a panic is returned
// as an error. Failures are already in the ledger when Tick returns.
func (rt *Runtime) Tick(ctx context.Context, a Agent, p *config.Project, role config.Role, cause Cause) (err error) {
	if paused, perr := rt.opts.Enablement.Paused(p.Name, role); perr != nil {
		rt.opts.Log.Warn().Err(perr).Msg("read agent enablement; treating as enabled")
	} else if paused {
		rt.opts.Log.Debug().Str(logx.KeyProject, p.Name).Str(logx.KeyAgent, string(role)).Msg("paused; skipping tick")
		return fmt.Errorf("%s/%s: %w", p.Name, role, ErrPaused)
	}
	start := rt.opts.Now()
	id := fmt.Sprintf("%s-%s-%s-%d", p.Name, role, start.UTC().Format("20060102T150405"), rt.seq.Add(1))
	// Work the tick starts runs under ctx, not under the tick's deadline.
	run := &Run{
		ID: id, Project: p, Role: role, Cause: cause, Start: start, rt: rt, workCtx: ctx,
		Log: rt.opts.Log.With().Str(logx.KeyProject, p.Name).Str(logx.KeyAgent, string(role)).Str(logx.KeyRun, id).Logger(),
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tick %s: panic: %v", id, v)
			rt.fail(run, start, ledger.CodeEnginePanic, err, debug.Stack())
		}
		if rt.opts.OnTick != nil {
			rt.opts.OnTick(p.Name, role, rt.opts.Now().Sub(start), err)
		}
	}()
	tickCtx, cancel := ctx, context.CancelFunc(func() {})
	if rt.opts.TickTimeout > 0 {
		tickCtx, cancel = context.WithTimeout(ctx, rt.opts.TickTimeout)
	}
	defer cancel()
	// The tick has a heartbeat of its own (a formula agent's session runs
	// inside it); work it starts gets one each, not this one.
	rt.mu.Lock()
	tb := rt.startBeat(workKey(p.Name, role, "tick "+id), Heartbeat{Project: p.Name, Role: string(role), Key: "tick", Run: id,
		StartedAt: start, LastProgressAt: start, Step: "tick"})
	rt.mu.Unlock()
	defer tb.end()
	tickCtx = claude.WithScope(tb.with(tickCtx), scopeOf(p, role))
	if err := a.Tick(tickCtx, run); err != nil {
		code, permanent := Classify(err)
		switch {
		case ctx.Err() != nil:
			code, permanent = ledger.CodeEngineShutdown, false
		case tickCtx.Err() != nil:
			code, permanent = CodeTickTimeout, false
			err = fmt.Errorf("tick exceeded %s: %w", rt.opts.TickTimeout, err)
		}
		first, count := rt.noteFailure(p, role, code, permanent)
		rt.failTick(run, start, code, err, first, count)
		return &TickError{Code: code, Permanent: permanent, Err: fmt.Errorf("tick %s: %w", id, err)}
	}
	if n := rt.noteSuccess(p, role); n > 0 {
		run.Log.Info().Int("failures", n).Msg("agent runs succeed again")
	}
	return nil
}

// failTick records a failed tick. Only the first failure of a streak is
// an error line; the rest of the streak is counted at debug level, so a
// forge that is down for an hour is said once, not every tick.
//
// A rejected forge token is the exception: whoever holds the token says
// that (the daemon disables the bot's jobs with one error line; a one-shot
// run exits with the error), so the tick's own line is a warning.
func (rt *Runtime) failTick(run *Run, start time.Time, code ledger.Code, err error, first bool, count int) {
	switch {
	case first && code == ledger.CodeForgeUnauthorized:
		run.Log.Warn().Err(err).Str(logx.KeyOutcome, string(code)).Msg("agent run failed: forge token rejected")
	case first || code == ledger.CodeEngineShutdown:
		rt.fail(run, start, code, err, nil)
		return
	default:
		run.Log.Debug().Err(err).Str(logx.KeyOutcome, string(code)).Int("streak", count).Msg("agent run failed again")
	}
	if rerr := run.Record(ledger.Record{Start: start, Reason: ledger.ReasonEngineError, Code: code, Detail: text.Clip(err.Error(), 300)}); rerr != nil {
		run.Log.Error().Err(rerr).Msg("write ledger record")
	}
}

// fail logs a failed tick or work and writes its engine-error record.
func (rt *Runtime) fail(run *Run, start time.Time, code ledger.Code, err error, stack []byte) {
	ev := run.Log.Error().Err(err).Str(logx.KeyOutcome, string(code))
	if stack != nil {
		ev = ev.Bytes("stack", stack)
	}
	ev.Msg("agent run failed")
	reason := ledger.ReasonEngineError
	if code == ledger.CodeEngineShutdown {
		reason = ledger.ReasonInterrupted
	}
	if rerr := run.Record(ledger.Record{Start: start, Reason: reason, Code: code, Detail: text.Clip(err.Error(), 300)}); rerr != nil {
		run.Log.Error().Err(rerr).Msg("write ledger record")
	}
}

func (rt *Runtime) record(rec ledger.Record) error {
	if rec.End.IsZero() {
		rec.End = rt.opts.Now()
	}
	if rt.opts.Ledger == nil {
		return rec.Validate()
	}
	if err := rt.opts.Ledger.Append(rec); err != nil {
		return fmt.Errorf("record outcome: %w", err)
	}
	return nil
}

// workKey names work in the runtime's map: its project, role and key.
func workKey(project string, role config.Role, key string) string {
	return project + "/" + string(role) + "/" + key
}

// Busy reports whether work with key of project and role is running.
func (rt *Runtime) Busy(project string, role config.Role, key string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, busy := rt.work[workKey(project, role, key)]
	return busy
}

func (rt *Runtime) spawn(ctx context.Context, run *Run, key string, fn func(context.Context)) bool {
	wkey := workKey(run.Project.Name, run.Role, key)
	rt.mu.Lock()
	if _, busy := rt.work[wkey]; busy {
		rt.mu.Unlock()
		run.Log.Debug().Str("work", key).Msg("work already running; not starting another")
		return false
	}
	since := rt.opts.Now()
	rt.work[wkey] = Work{Project: run.Project.Name, Role: string(run.Role), Key: key, Run: run.ID, Since: since}
	b := rt.startBeat(wkey, Heartbeat{Project: run.Project.Name, Role: string(run.Role), Key: key, Run: run.ID,
		StartedAt: since, LastProgressAt: since, Step: "work"})
	rt.wg.Add(1)
	rt.mu.Unlock()

	if run.workCtx != nil {
		// Not the tick's context: its deadline ends the tick, not the work.
		ctx = run.workCtx
	}
	ctx = claude.WithScope(b.with(ctx), scopeOf(run.Project, run.Role))
	go func() {
		defer rt.wg.Done()
		defer func() {
			rt.mu.Lock()
			delete(rt.work, wkey)
			delete(rt.beats, wkey)
			rt.mu.Unlock()
		}()
		start := rt.opts.Now()
		defer func() {
			if v := recover(); v != nil {
				rt.fail(run, start, ledger.CodeEnginePanic, fmt.Errorf("work %s: panic: %v", key, v), debug.Stack())
			}
		}()
		fn(ctx)
	}()
	return true
}

// Running lists background work in flight, oldest first.
func (rt *Runtime) Running() []Work {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]Work, 0, len(rt.work))
	for _, w := range rt.work {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// Wait blocks until all background work has returned or ctx ends, and
// returns ctx's error in the latter case.
func (rt *Runtime) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		rt.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scopeOf is whom role's sessions on p work for, with p's budgets: what
// the model gateway meters and holds them to.
func scopeOf(p *config.Project, role config.Role) claude.Scope {
	return claude.Scope{Project: p.Name, Role: string(role), TZ: p.Budget.Zone, Limits: gateway.Limits{
		Run:     bound(p.Budget.RunBound(role)),
		Day:     bound(p.Budget.Day),
		RoleDay: bound(p.Budget.Roles[role].Day),
	}}
}

// bound is b as the gateway holds it.
func bound(b config.Bound) gateway.Bound {
	return gateway.Bound{Tokens: b.Tokens, USD: b.USD}
}
