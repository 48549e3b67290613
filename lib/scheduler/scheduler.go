// Package scheduler runs per-(project, role) jobs on intervals or cron
// schedules: staggered deterministic offsets, no overlap (a run still going
// makes the next boundary a logged skip), trigger-now with debounce for
// webhooks, and last-run times persisted so a restart neither resets the
// clock nor runs every slow agent at once. Windows missed while the daemon
// was down, or while the clock jumped, are caught up with one run, never
// one per window. Time comes from an injected Clock.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// Cause says why a run started.
type Cause string

// Causes of a run.
const (
	CauseSchedule Cause = "schedule"
	CauseCatchUp  Cause = "catch-up"
	CauseTrigger  Cause = "trigger"
)

// FirstRun is what a job does when no last run was ever recorded.
type FirstRun int

// First-run policies.
const (
	// FirstRunSoon runs the job Offset after the scheduler starts
	// (the reference behaviour of dev and review).
	FirstRunSoon FirstRun = iota
	// FirstRunAfterInterval waits a full interval plus Offset (the reference
	// behaviour of the slow agents, which never run at start-up).
	FirstRunAfterInterval
	// FirstRunEveryStart runs the job Offset after every start, whatever
	// its last run: a restarted daemon resumes the dev and review work that
	// was in flight at once, not an interval later. Later runs keep the
	// interval.
	FirstRunEveryStart
)

// Tick describes one run handed to a Job's Run function.
type Tick struct {
	Cause Cause
	// Due is when the run was scheduled (or triggered) to start.
	Due time.Time
}

// Schedule is a cron schedule. Next returns the first activation strictly
// after t, or the zero time when there is none; String gives the
// expression. config.Schedule (robfig/cron/v3) implements it.
type Schedule interface {
	Next(t time.Time) time.Time
	String() string
}

// Job is one (project, role) pair with its cadence: an Interval, or a
// Schedule, which then decides every regular run.
type Job struct {
	Project  string
	Role     string
	Interval time.Duration
	// Schedule, when set, replaces Interval: regular runs are due at its
	// activations (plus Offset), and AfterFinish is ignored.
	Schedule Schedule
	// Offset staggers the job: its first run and any catch-up run after a
	// restart happen Offset after start-up, and a scheduled job runs
	// Offset after each activation. See ProjectSlot.
	Offset   time.Duration
	FirstRun FirstRun
	// AfterFinish measures the interval from the end of the previous run
	// instead of from its scheduled start (the supervisor's cadence).
	AfterFinish bool
	// Run does the work. It runs in its own goroutine; a panic is recovered
	// and reported as an error. ctx is the jobs context given to
	// Scheduler.Run.
	Run func(ctx context.Context, t Tick) error
}

// Key returns "project/role", the job's identity in logs and the store.
func (j Job) Key() string { return j.Project + "/" + j.Role }

// after returns the first regular due time strictly after t: one interval
// later, or the schedule's next activation plus the offset.
func (j Job) after(t time.Time) time.Time {
	if j.Schedule == nil {
		return t.Add(j.Interval)
	}
	next := j.Schedule.Next(t.Add(-j.Offset))
	if next.IsZero() {
		return next
	}
	return next.Add(j.Offset)
}

// period is the job's cadence near t: the interval, or the gap between
// the schedule's next two activations. Backoff is measured in it.
func (j Job) period(t time.Time) time.Duration {
	if j.Schedule == nil {
		return j.Interval
	}
	a := j.Schedule.Next(t)
	b := j.Schedule.Next(a)
	if a.IsZero() || b.IsZero() {
		return time.Hour
	}
	return b.Sub(a)
}

// afterFinish reports whether the job's interval runs from the end of its
// previous run; a scheduled job follows its schedule instead.
func (j Job) afterFinish() bool { return j.AfterFinish && j.Schedule == nil }

// Options configures a Scheduler.
type Options struct {
	Clock Clock
	// Store persists last-run times; nil keeps them in memory only.
	Store *Store
	Log   zerolog.Logger
	// Debounce delays a triggered run so that a burst of events becomes one
	// run (default 500ms).
	Debounce time.Duration
	// Settle is the delay of the first trigger after a quiet spell (no
	// trigger for Debounce): a lone event is acted on at once, while the
	// later triggers of a burst wait Debounce. Default 50ms with the
	// default Debounce; with a Debounce set, Debounce.
	Settle time.Duration
	// Redactor masks secrets in the last error a job keeps, which the
	// store persists and /status shows; nil still masks credential-shaped
	// text.
	Redactor *redact.Redactor
	// MaxBackoff caps how far failures push a job's next run: after n
	// failed runs in a row the next comes Interval·2^(n-1) later (with
	// jitter), at most MaxBackoff or Interval if that is longer. Default
	// one hour.
	MaxBackoff time.Duration
	// Jitter spreads a backoff delay d; default ±10 % at random.
	Jitter func(d time.Duration) time.Duration
}

// backoff is how long after a failed run the next regular run of a job
// with interval every waits, after failures failed runs in a row.
func backoff(every, limit time.Duration, failures int) time.Duration {
	limit = max(limit, every)
	d := every
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func tenPercent(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
}

// ErrDuplicate is returned by Add for a job whose key is already scheduled.
var ErrDuplicate = errors.New("job already scheduled")

// Scheduler runs jobs. Add jobs, then call Run once.
type Scheduler struct {
	opts Options
	wake chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	jobs    []*job
	byKey   map[string]*job
	started bool
}

type job struct {
	Job
	next      time.Time // next regular run; zero while an AfterFinish job runs
	triggerAt time.Time // pending trigger; zero if none
	triggered time.Time // when Trigger was last called
	running   bool
	catchUp   bool
	runs      int
	skips     int
	failures  int // failed runs in a row
	state     JobState
}

// New returns a Scheduler.
func New(opts Options) *Scheduler {
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.Settle <= 0 && opts.Debounce <= 0 {
		opts.Settle = 50 * time.Millisecond
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 500 * time.Millisecond
	}
	if opts.Settle <= 0 || opts.Settle > opts.Debounce {
		opts.Settle = opts.Debounce
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Hour
	}
	if opts.Jitter == nil {
		opts.Jitter = tenPercent
	}
	return &Scheduler{opts: opts, wake: make(chan struct{}, 1), byKey: map[string]*job{}}
}

// Add schedules j. It must be called before Run.
func (s *Scheduler) Add(j Job) error {
	switch {
	case j.Schedule != nil:
		if j.Schedule.Next(s.opts.Clock.Now()).IsZero() {
			return fmt.Errorf("job %s: schedule %q never fires", j.Key(), j.Schedule)
		}
	case j.Interval <= 0:
		return fmt.Errorf("job %s: interval must be positive", j.Key())
	}
	if j.Run == nil {
		return fmt.Errorf("job %s: no run function", j.Key())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("job %s: scheduler already running", j.Key())
	}
	if _, ok := s.byKey[j.Key()]; ok {
		return fmt.Errorf("job %s: %w", j.Key(), ErrDuplicate)
	}
	jb := &job{Job: j}
	jb.state, _ = s.opts.Store.Get(j.Key())
	s.jobs = append(s.jobs, jb)
	s.byKey[j.Key()] = jb
	return nil
}

// ProjectSlot maps a project name to a deterministic offset in [0, spread),
// so that many projects spread their polls instead of all firing at once.
func ProjectSlot(project string, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(project))
	return time.Duration(h.Sum64()%uint64(spread/time.Second)) * time.Second
}

// Run plans every job from its persisted state and loops until ctx ends.
// Runs get jobsCtx, which the caller cancels later than ctx for a two-phase
// shutdown. Run returns once ctx is done and every run has returned.
func (s *Scheduler) Run(ctx, jobsCtx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("scheduler already running")
	}
	s.started = true
	now := s.opts.Clock.Now()
	for _, j := range s.jobs {
		s.plan(j, now)
	}
	s.mu.Unlock()

	defer s.wg.Wait()
	for {
		s.mu.Lock()
		// Checked before every poll, not only after waking: a stop that
		// arrived meanwhile (or before Run) must not claim one more run.
		if ctx.Err() != nil {
			s.mu.Unlock()
			s.opts.Log.Info().Msg("scheduler stopped claiming new runs")
			return nil
		}
		now := s.opts.Clock.Now()
		var wakeAt time.Time
		for _, j := range s.jobs {
			if t := s.poll(jobsCtx, j, now); !t.IsZero() && (wakeAt.IsZero() || t.Before(wakeAt)) {
				wakeAt = t
			}
		}
		s.mu.Unlock()

		var timer Timer
		var fire <-chan time.Time
		if !wakeAt.IsZero() {
			timer = s.opts.Clock.NewTimer(wakeAt.Sub(now))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-s.wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// plan sets a job's first due time from its persisted state; s.mu is held.
func (s *Scheduler) plan(j *job, now time.Time) {
	last := j.state.LastDue
	if j.afterFinish() && !j.state.LastEnd.IsZero() {
		last = j.state.LastEnd
	}
	switch {
	case j.FirstRun == FirstRunEveryStart:
		j.next = now.Add(j.Offset)
	case last.IsZero() && j.FirstRun == FirstRunAfterInterval && j.Schedule != nil:
		j.next = j.after(now)
	case last.IsZero() && j.FirstRun == FirstRunAfterInterval:
		j.next = now.Add(j.Interval + j.Offset)
	case last.IsZero():
		j.next = now.Add(j.Offset)
	case j.after(last).After(now):
		j.next = j.after(last)
	default:
		// Overdue after downtime: however many windows were missed, run
		// once soon, staggered by the offset; then the cadence resumes.
		j.next = now.Add(j.Offset)
		j.catchUp = true
		s.opts.Log.Info().Str(logx.KeyProject, j.Project).Str(logx.KeyAgent, j.Role).
			Time("last", last).Time("next", j.next).Msg("overdue after restart; catching up")
	}
}

// poll starts what is due and returns the job's next wake-up; s.mu is held.
func (s *Scheduler) poll(ctx context.Context, j *job, now time.Time) time.Time {
	started := false
	if !j.next.IsZero() && !now.Before(j.next) {
		due := j.next
		cause := CauseSchedule
		if j.catchUp {
			cause, j.catchUp = CauseCatchUp, false
		}
		if j.running {
			j.skips++
			s.opts.Log.Info().Str(logx.KeyProject, j.Project).Str(logx.KeyAgent, j.Role).
				Time("due", due).Msg("skipping run: previous run still going")
		} else {
			s.start(ctx, j, Tick{Cause: cause, Due: due}, true)
			started = true
		}
		switch {
		case j.afterFinish() && started:
			j.next = time.Time{}
		case j.Schedule != nil:
			// Windows the clock jumped over are not run one by one: the
			// run just started (or skipped) stands for all of them.
			j.next = j.after(now)
		default:
			for !j.next.After(now) {
				j.next = j.next.Add(j.Interval)
			}
		}
	}
	if !j.triggerAt.IsZero() && !now.Before(j.triggerAt) {
		switch {
		case started:
			j.triggerAt = time.Time{} // the run just started covers the event
		case !j.running:
			due := j.triggerAt
			j.triggerAt = time.Time{}
			s.start(ctx, j, Tick{Cause: CauseTrigger, Due: due}, false)
		}
	}
	wake := j.next
	if !j.triggerAt.IsZero() && !j.running && (wake.IsZero() || j.triggerAt.Before(wake)) {
		wake = j.triggerAt
	}
	return wake
}

// start launches one run in its own goroutine; s.mu is held.
func (s *Scheduler) start(ctx context.Context, j *job, t Tick, regular bool) {
	j.running = true
	j.runs++
	j.state.LastStart = s.opts.Clock.Now()
	if regular {
		j.state.LastDue = t.Due
	}
	s.persist(j)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := safeRun(ctx, j.Run, t)
		s.finish(j, err)
	}()
}

func (s *Scheduler) finish(j *job, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.running = false
	j.state.LastEnd = s.opts.Clock.Now()
	j.state.LastError = ""
	if err != nil {
		j.state.LastError = s.opts.Redactor.Error(err)
	}
	if j.afterFinish() {
		j.next = j.state.LastEnd.Add(j.Interval)
	}
	if err == nil {
		j.failures = 0
	} else {
		// Failing again at the same pace only repeats the failure: back
		// off, up to the cap, until a run succeeds.
		j.failures++
		if j.failures > 1 {
			every := j.period(j.state.LastEnd)
			hold := j.state.LastEnd.Add(s.opts.Jitter(backoff(every, s.opts.MaxBackoff, j.failures)))
			if !j.next.IsZero() && j.next.Before(hold) {
				j.next = hold
				if j.Schedule != nil {
					// The first activation at or after the hold.
					j.next = j.after(hold.Add(-time.Nanosecond))
				}
			}
		}
	}
	s.persist(j)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// persist writes the job's state; s.mu is held. A failing disk is logged,
// not fatal: the schedule then only lives in memory until the next write.
func (s *Scheduler) persist(j *job) {
	if err := s.opts.Store.Put(j.Key(), j.state); err != nil {
		s.opts.Log.Warn().Err(err).Str(logx.KeyProject, j.Project).Str(logx.KeyAgent, j.Role).
			Msg("persist schedule")
	}
}

// PanicError is returned for a run that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func safeRun(ctx context.Context, fn func(context.Context, Tick) error, t Tick) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, t)
}

// JobStatus is a snapshot of one job for /status.
type JobStatus struct {
	Project  string        `json:"project"`
	Role     string        `json:"role"`
	Interval time.Duration `json:"interval_ns"`
	// Schedule is the cron expression of a scheduled job; empty for an
	// interval job.
	Schedule string    `json:"schedule,omitempty"`
	Next     time.Time `json:"next,omitzero"`
	Running  bool      `json:"running"`
	// TriggerAt is when a pending trigger fires; zero if none is pending.
	TriggerAt time.Time `json:"trigger_at,omitzero"`
	Runs      int       `json:"runs"`
	Skips     int       `json:"skips"`
	// Failures counts the failed runs in a row that push Next back.
	Failures int `json:"failures,omitempty"`
	JobState
}

// Snapshot returns the status of every job, sorted by project then role.
func (s *Scheduler) Snapshot() []JobStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobStatus, 0, len(s.jobs))
	for _, j := range s.jobs {
		var sched string
		if j.Schedule != nil {
			sched = j.Schedule.String()
		}
		out = append(out, JobStatus{
			Project: j.Project, Role: j.Role, Interval: j.Interval, Schedule: sched, Next: j.next,
			Running: j.running, TriggerAt: j.triggerAt,
			Runs: j.runs, Skips: j.skips, Failures: j.failures, JobState: j.state,
		})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Project != out[b].Project {
			return out[a].Project < out[b].Project
		}
		return out[a].Role < out[b].Role
	})
	return out
}
