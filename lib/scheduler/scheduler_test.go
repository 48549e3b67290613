package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/scheduler/schedtest"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// harness runs a scheduler on a manual clock and records every run.
type harness struct {
	t     *testing.T
	clk   *schedtest.Clock
	s     *scheduler.Scheduler
	stop  context.CancelFunc
	done  chan error
	mu    sync.Mutex
	ticks map[string][]scheduler.Tick
	gates map[string]chan struct{} // runs of these roles block until closed
}

func newHarness(t *testing.T, clk *schedtest.Clock, store *scheduler.Store, jobs ...scheduler.Job) *harness {
	t.Helper()
	return newHarnessWith(t, scheduler.Options{Clock: clk, Store: store, Log: logx.Nop(), Debounce: time.Second}, jobs...)
}

// newHarnessWith is newHarness with the scheduler's options spelled out.
func newHarnessWith(t *testing.T, opts scheduler.Options, jobs ...scheduler.Job) *harness {
	t.Helper()
	clk := opts.Clock.(*schedtest.Clock)
	h := &harness{t: t, clk: clk, ticks: map[string][]scheduler.Tick{}, gates: map[string]chan struct{}{}}
	h.s = scheduler.New(opts)
	for _, j := range jobs {
		if j.Run == nil {
			role := j.Role
			j.Run = func(ctx context.Context, tk scheduler.Tick) error {
				h.mu.Lock()
				h.ticks[role] = append(h.ticks[role], tk)
				gate := h.gates[role]
				h.mu.Unlock()
				if gate != nil {
					select {
					case <-gate:
					case <-ctx.Done():
					}
				}
				return nil
			}
		}
		if err := h.s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) start() { h.startBlocked(0) }

func (h *harness) startBlocked(blocked int) {
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.s.Run(ctx, context.Background()) }()
	h.t.Cleanup(h.shutdown)
	// Wait until Run has planned the jobs before judging whether it sleeps.
	eventually(h.t, "scheduler started", func() bool {
		for _, st := range h.s.Snapshot() {
			if !st.Next.IsZero() || st.Runs > 0 {
				return true
			}
		}
		return false
	})
	h.settle(blocked)
}

func (h *harness) shutdown() {
	if h.stop == nil {
		return
	}
	h.stop()
	h.mu.Lock()
	for _, g := range h.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
	h.mu.Unlock()
	if err := <-h.done; err != nil {
		h.t.Error(err)
	}
	h.stop = nil
}

// settle waits until no run is in flight except those blocked on a gate
// (blocked of them), and the loop sleeps on exactly the timer its
// published state calls for.
func (h *harness) settle(blocked int) {
	h.t.Helper()
	var running int
	var dl []time.Time
	var want time.Time
	eventually(h.t, "scheduler settled", func() bool {
		running, want = 0, time.Time{}
		for _, st := range h.s.Snapshot() {
			if st.Running {
				running++
			}
			w := st.Next
			if !st.TriggerAt.IsZero() && !st.Running && (w.IsZero() || st.TriggerAt.Before(w)) {
				w = st.TriggerAt
			}
			if !w.IsZero() && (want.IsZero() || w.Before(want)) {
				want = w
			}
		}
		dl = h.clk.Deadlines()
		asleep := (want.IsZero() && len(dl) == 0) || (len(dl) == 1 && dl[0].Equal(want))
		return running == blocked && asleep
	}, func() string { return fmt.Sprintf("%d running, timers %v, want %v", running, dl, want) })
}

// eventually polls cond until it holds, failing after 10s of real time.
func eventually(t *testing.T, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			msg := ""
			for _, d := range detail {
				msg = d()
			}
			t.Fatalf("timed out waiting for %s %s", what, msg)
		}
	}
}

// walk advances the clock by total in steps of step, settling after each.
func (h *harness) walk(total, step time.Duration, blocked int) {
	for d := time.Duration(0); d < total; d += step {
		h.clk.Advance(step)
		h.settle(blocked)
	}
}

func (h *harness) got(role string) []scheduler.Tick {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]scheduler.Tick(nil), h.ticks[role]...)
}

func TestFastCadenceAndStagger(t *testing.T) {
	clk := schedtest.NewClock(t0)
	slot := scheduler.ProjectSlot("alpha", time.Minute)
	h := newHarness(t, clk, nil,
		scheduler.Job{Project: "alpha", Role: "review", Interval: 300 * time.Second, Offset: slot},
		scheduler.Job{Project: "alpha", Role: "dev", Interval: 300 * time.Second, Offset: slot + 2*time.Second},
		scheduler.Job{Project: "alpha", Role: "gardener", Interval: 6 * time.Hour, FirstRun: scheduler.FirstRunAfterInterval},
	)
	h.start()
	h.walk(16*time.Minute, time.Second, 0)

	review, dev := h.got("review"), h.got("dev")
	if n := len(review); n < 3 || n > 4 {
		t.Fatalf("review ran %d times in 16m, want 3 or 4", n)
	}
	if len(dev) != len(review) {
		t.Fatalf("dev ran %d times, review %d", len(dev), len(review))
	}
	for i := range review {
		if gap := dev[i].Due.Sub(review[i].Due); gap != 2*time.Second {
			t.Errorf("iteration %d: dev %v after review, want 2s", i, gap)
		}
		if i > 0 {
			if gap := review[i].Due.Sub(review[i-1].Due); gap != 300*time.Second {
				t.Errorf("review interval %v, want 300s", gap)
			}
		}
	}
	if g := h.got("gardener"); len(g) != 0 {
		t.Errorf("gardener ran %d times, want none before its interval", len(g))
	}
}

func TestProjectSlotsSpread(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		s := scheduler.ProjectSlot(p, time.Minute)
		if s < 0 || s >= time.Minute {
			t.Fatalf("slot %v out of range", s)
		}
		if s != scheduler.ProjectSlot(p, time.Minute) {
			t.Fatal("slot not deterministic")
		}
		seen[s] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 projects share %d slots", len(seen))
	}
}

func TestSlowBoundary(t *testing.T) {
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, nil,
		scheduler.Job{Project: "p", Role: "gardener", Interval: 3 * time.Second, FirstRun: scheduler.FirstRunAfterInterval})
	h.start()
	h.walk(7*time.Second, time.Second, 0)
	var at []time.Duration
	for _, tk := range h.got("gardener") {
		at = append(at, tk.Due.Sub(t0))
	}
	if len(at) != 2 || at[0] != 3*time.Second || at[1] != 6*time.Second {
		t.Fatalf("gardener ran at %v, want [3s 6s]", at)
	}
}

func TestNoOverlap(t *testing.T) {
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, nil, scheduler.Job{Project: "p", Role: "gardener", Interval: 10 * time.Second})
	gate := make(chan struct{})
	h.gates["gardener"] = gate
	h.startBlocked(1) // first run starts at once and blocks
	h.walk(25*time.Second, 5*time.Second, 1)
	st := h.s.Snapshot()[0]
	if st.Runs != 1 || st.Skips != 2 {
		t.Fatalf("runs=%d skips=%d, want 1 run and 2 skips while running", st.Runs, st.Skips)
	}
	h.mu.Lock()
	close(gate)
	delete(h.gates, "gardener")
	h.mu.Unlock()
	h.settle(0)
	h.walk(10*time.Second, 5*time.Second, 0)
	if n := len(h.got("gardener")); n != 2 {
		t.Fatalf("gardener ran %d times after release, want 2", n)
	}
}

func TestRestartKeepsLastRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule.json")
	open := func() *scheduler.Store {
		st, err := scheduler.OpenStore(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	planner := scheduler.Job{Project: "p", Role: "planner", Interval: 12 * time.Hour, Offset: 4 * time.Second}

	// First life: the planner runs at start (offset 4s).
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, open(), planner)
	h.start()
	h.walk(5*time.Second, time.Second, 0)
	if n := len(h.got("planner")); n != 1 {
		t.Fatalf("first life: planner ran %d times", n)
	}
	h.shutdown()

	// Restart one hour later: nothing runs until 12h after the last run.
	clk = schedtest.NewClock(t0.Add(time.Hour))
	h = newHarness(t, clk, open(), planner)
	h.start()
	next := h.s.Snapshot()[0].Next
	if want := t0.Add(4*time.Second + 12*time.Hour); !next.Equal(want) {
		t.Fatalf("after restart next = %v, want %v", next, want)
	}
	h.walk(11*time.Hour, time.Hour, 0)
	if n := len(h.got("planner")); n != 0 {
		t.Fatalf("planner ran %d times before its interval after restart", n)
	}
	h.shutdown()

	// Restart after a long outage: overdue, so it catches up at its offset.
	clk = schedtest.NewClock(t0.Add(30 * time.Hour))
	h = newHarness(t, clk, open(), planner)
	h.start()
	h.walk(5*time.Second, time.Second, 0)
	got := h.got("planner")
	if len(got) != 1 || got[0].Cause != scheduler.CauseCatchUp {
		t.Fatalf("overdue planner: %+v, want one catch-up run", got)
	}
}

// TestEveryStart: a fast job restarted a minute after its last run runs at
// its offset (resuming in-flight work), then keeps its interval.
func TestEveryStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule.json")
	st, err := scheduler.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	dev := scheduler.Job{Project: "p", Role: "dev", Interval: 5 * time.Minute, Offset: 2 * time.Second, FirstRun: scheduler.FirstRunEveryStart}
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, st, dev)
	h.start()
	h.walk(3*time.Second, time.Second, 0)
	h.shutdown()

	if st, err = scheduler.OpenStore(path); err != nil {
		t.Fatal(err)
	}
	clk = schedtest.NewClock(t0.Add(time.Minute))
	h = newHarness(t, clk, st, dev)
	h.start()
	h.walk(3*time.Second, time.Second, 0)
	if n := len(h.got("dev")); n != 1 {
		t.Fatalf("dev ran %d times right after the restart, want 1", n)
	}
	h.walk(4*time.Minute, 10*time.Second, 0)
	if n := len(h.got("dev")); n != 1 {
		t.Fatalf("dev ran %d times within its interval, want 1", n)
	}
	h.walk(2*time.Minute, 10*time.Second, 0)
	if n := len(h.got("dev")); n != 2 {
		t.Fatalf("dev ran %d times after its interval, want 2", n)
	}
}

func TestTriggerDebounceAndPending(t *testing.T) {
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, nil, scheduler.Job{Project: "p", Role: "dev", Interval: time.Hour, FirstRun: scheduler.FirstRunAfterInterval})
	h.start()
	for range 3 {
		if !h.s.Trigger("p", "dev") {
			t.Fatal("trigger of a known job returned false")
		}
	}
	if h.s.Trigger("p", "nope") {
		t.Fatal("trigger of an unknown job returned true")
	}
	h.walk(2*time.Second, 500*time.Millisecond, 0)
	if got := h.got("dev"); len(got) != 1 || got[0].Cause != scheduler.CauseTrigger {
		t.Fatalf("after burst of 3 triggers: %+v, want one triggered run", got)
	}

	// A trigger while running waits for the run to end, then runs once.
	gate := make(chan struct{})
	h.mu.Lock()
	h.gates["dev"] = gate
	h.mu.Unlock()
	h.s.Trigger("p", "dev")
	h.walk(time.Second, time.Second, 1)
	h.s.Trigger("p", "dev")
	h.walk(3*time.Second, time.Second, 1)
	if n := len(h.got("dev")); n != 2 {
		t.Fatalf("overlapping trigger started a run: %d runs", n)
	}
	h.mu.Lock()
	close(gate)
	delete(h.gates, "dev")
	h.mu.Unlock()
	h.settle(0)
	h.walk(time.Second, time.Second, 0)
	if n := len(h.got("dev")); n != 3 {
		t.Fatalf("pending trigger lost: %d runs, want 3", n)
	}
}

func TestPanicAndErrorRecorded(t *testing.T) {
	clk := schedtest.NewClock(t0)
	calls := 0
	h := newHarness(t, clk, nil, scheduler.Job{Project: "p", Role: "dev", Interval: 10 * time.Second,
		Run: func(context.Context, scheduler.Tick) error {
			calls++
			if calls == 1 {
				panic("boom")
			}
			return errors.New("forge down")
		}})
	h.start()
	if st := h.s.Snapshot()[0]; !strings.Contains(st.LastError, "panic: boom") {
		t.Fatalf("last error %q, want the panic", st.LastError)
	}
	h.walk(10*time.Second, 10*time.Second, 0)
	if st := h.s.Snapshot()[0]; st.LastError != "forge down" || st.Runs != 2 {
		t.Fatalf("after second run: %+v", st)
	}
}

func TestLastErrorRedacted(t *testing.T) {
	const secret = `f0rge"t0ken\x`
	clk := schedtest.NewClock(t0)
	store, err := scheduler.OpenStore(filepath.Join(t.TempDir(), "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, scheduler.Options{Clock: clk, Store: store, Log: logx.Nop(), Redactor: redact.New(secret)},
		scheduler.Job{Project: "p", Role: "dev", Interval: 10 * time.Second,
			Run: func(context.Context, scheduler.Tick) error { return errors.New("forge said: bad token " + secret) }})
	h.start()
	if st := h.s.Snapshot()[0]; st.LastError != "forge said: bad token "+redact.Mask {
		t.Fatalf("last error %q", st.LastError)
	}
	for key, st := range store.All() {
		if strings.Contains(st.LastError, "t0ken") {
			t.Errorf("store keeps the secret for %s: %q", key, st.LastError)
		}
	}
}

func TestAfterFinish(t *testing.T) {
	clk := schedtest.NewClock(t0)
	h := newHarness(t, clk, nil, scheduler.Job{Project: "p", Role: "supervisor", Interval: 20 * time.Minute, AfterFinish: true})
	gate := make(chan struct{})
	h.gates["supervisor"] = gate
	h.startBlocked(1)
	h.walk(5*time.Minute, time.Minute, 1) // runs for 5 minutes
	h.mu.Lock()
	close(gate)
	delete(h.gates, "supervisor")
	h.mu.Unlock()
	h.settle(0)
	if next := h.s.Snapshot()[0].Next; !next.Equal(t0.Add(25 * time.Minute)) {
		t.Fatalf("next = %v, want 20m after the end of the run", next.Sub(t0))
	}
}

func TestAddValidates(t *testing.T) {
	s := scheduler.New(scheduler.Options{})
	run := func(context.Context, scheduler.Tick) error { return nil }
	if err := s.Add(scheduler.Job{Project: "p", Role: "dev", Run: run}); err == nil {
		t.Error("zero interval accepted")
	}
	if err := s.Add(scheduler.Job{Project: "p", Role: "dev", Interval: time.Second, Run: run}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(scheduler.Job{Project: "p", Role: "dev", Interval: time.Second, Run: run}); !errors.Is(err, scheduler.ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
}

// A scheduler whose context has already ended (a SIGTERM during start-up)
// claims no run, not even one that is due at once.
func TestRunAfterCancelStartsNothing(t *testing.T) {
	clk := schedtest.NewClock(t0)
	ran := make(chan struct{}, 1)
	s := scheduler.New(scheduler.Options{Clock: clk, Log: logx.Nop()})
	if err := s.Add(scheduler.Job{Project: "p", Role: "dev", Interval: time.Minute,
		Run: func(context.Context, scheduler.Tick) error { ran <- struct{}{}; return nil }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx, context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
		t.Fatal("a run started after the scheduler was told to stop")
	default:
	}
	if st := s.Snapshot(); st[0].Runs != 0 {
		t.Fatalf("runs = %d, want 0", st[0].Runs)
	}
}

// TestBackoffOnFailures: a job that keeps failing runs at its interval,
// then twice, four times as far apart, up to the cap; one success brings
// its interval back.
func TestBackoffOnFailures(t *testing.T) {
	clk := schedtest.NewClock(t0)
	var mu sync.Mutex
	var dues []time.Duration
	failing := true
	job := scheduler.Job{Project: "p", Role: "dev", Interval: 10 * time.Second,
		Run: func(_ context.Context, tk scheduler.Tick) error {
			mu.Lock()
			defer mu.Unlock()
			dues = append(dues, tk.Due.Sub(t0))
			if failing {
				return errors.New("forge down")
			}
			return nil
		}}
	h := newHarnessWith(t, scheduler.Options{Clock: clk, Log: logx.Nop(), Debounce: time.Second,
		MaxBackoff: 40 * time.Second, Jitter: func(d time.Duration) time.Duration { return d }}, job)
	h.start()
	h.walk(110*time.Second, time.Second, 0)
	mu.Lock()
	got := fmt.Sprint(dues)
	failing = false
	mu.Unlock()
	// 0 fails; 10 fails (next in 20s); 30 fails (next in 40s, the cap); 70; 110.
	if want := "[0s 10s 30s 1m10s 1m50s]"; got != want {
		t.Fatalf("runs at %s, want %s", got, want)
	}
	if st := h.s.Snapshot()[0]; st.Failures != 5 {
		t.Errorf("failures = %d, want 5", st.Failures)
	}
	h.walk(50*time.Second, time.Second, 0)
	mu.Lock()
	got = fmt.Sprint(dues)
	mu.Unlock()
	// 110 fails and holds the next run until 150, which succeeds; from
	// then on the interval is 10s again.
	if want := "[0s 10s 30s 1m10s 1m50s 2m30s 2m40s]"; got != want {
		t.Fatalf("runs at %s, want %s", got, want)
	}
	if st := h.s.Snapshot()[0]; st.Failures != 0 {
		t.Errorf("failures after a success = %d", st.Failures)
	}
}
