package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/scheduler/schedtest"
)

func cronSchedule(t *testing.T, expr string) *config.Schedule {
	t.Helper()
	s, err := config.ParseSchedule(expr, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCronOnTheMinute: a */1 job runs on each minute, and a clock that
// jumps ten minutes brings one run, not ten.
func TestCronOnTheMinute(t *testing.T) {
	start := t0.Add(30 * time.Second)
	clk := schedtest.NewClock(start)
	h := newHarness(t, clk, nil, scheduler.Job{Project: "p", Role: "planner", Schedule: cronSchedule(t, "*/1 * * * *"),
		FirstRun: scheduler.FirstRunAfterInterval})
	h.start()
	if next := h.s.Snapshot()[0].Next; !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first run due %v, want the next minute %v", next, t0.Add(time.Minute))
	}
	h.walk(29*time.Second, time.Second, 0)
	if n := len(h.got("planner")); n != 0 {
		t.Fatalf("ran %d times before the minute", n)
	}
	h.walk(time.Second, time.Second, 0)
	h.walk(time.Minute, 15*time.Second, 0)
	got := h.got("planner")
	if len(got) != 2 || !got[0].Due.Equal(t0.Add(time.Minute)) || !got[1].Due.Equal(t0.Add(2*time.Minute)) ||
		got[0].Cause != scheduler.CauseSchedule {
		t.Fatalf("runs = %+v, want one at 00:01 and one at 00:02", got)
	}

	// The clock jumps ten minutes (a suspended host, NTP): one run.
	h.clk.Advance(10 * time.Minute)
	h.settle(0)
	got = h.got("planner")
	if len(got) != 3 {
		t.Fatalf("after a 10 minute jump: %d runs in all, want 3", len(got))
	}
	now := t0.Add(12 * time.Minute)
	if next := h.s.Snapshot()[0].Next; !next.Equal(now.Add(time.Minute)) {
		t.Fatalf("after the jump next = %v, want %v", next, now.Add(time.Minute))
	}
	h.walk(time.Minute, 30*time.Second, 0)
	if n := len(h.got("planner")); n != 4 {
		t.Fatalf("runs after the jump: %d, want 4", n)
	}
	if st := h.s.Snapshot()[0]; st.Schedule != "*/1 * * * *" {
		t.Errorf("snapshot schedule = %q", st.Schedule)
	}
}

// TestCronCatchUpOnceAfterRestart: a daily job whose persisted last run is
// three days old runs once at start-up (catch-up), then on its schedule.
func TestCronCatchUpOnceAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule.json")
	store, err := scheduler.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	offset := 5 * time.Second
	job := scheduler.Job{Project: "p", Role: "planner", Schedule: cronSchedule(t, "0 2 * * *"), Offset: offset,
		FirstRun: scheduler.FirstRunAfterInterval}
	lastDue := t0.Add(2*time.Hour + offset) // 1 March 02:00:05
	if err := store.Put(job.Key(), scheduler.JobState{LastDue: lastDue, LastStart: lastDue, LastEnd: lastDue.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	store, err = scheduler.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	restart := t0.Add(3*24*time.Hour + 12*time.Hour) // 4 March 12:00, three windows missed
	clk := schedtest.NewClock(restart)
	h := newHarness(t, clk, store, job)
	h.start()
	h.walk(10*time.Second, time.Second, 0)
	got := h.got("planner")
	if len(got) != 1 || got[0].Cause != scheduler.CauseCatchUp || !got[0].Due.Equal(restart.Add(offset)) {
		t.Fatalf("after restart: %+v, want one catch-up run at the offset", got)
	}
	wantNext := time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC).Add(offset)
	if next := h.s.Snapshot()[0].Next; !next.Equal(wantNext) {
		t.Fatalf("next = %v, want the schedule's %v", next, wantNext)
	}
	h.walk(14*time.Hour, time.Hour, 0)
	got = h.got("planner")
	if len(got) != 2 || got[1].Cause != scheduler.CauseSchedule || !got[1].Due.Equal(wantNext) {
		t.Fatalf("runs = %+v, want the catch-up then 5 March 02:00:05", got)
	}

	// A restart before the next window catches nothing up.
	h.shutdown()
	store, err = scheduler.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	clk = schedtest.NewClock(wantNext.Add(3 * time.Hour))
	h = newHarness(t, clk, store, job)
	h.start()
	h.walk(time.Minute, 10*time.Second, 0)
	if got := h.got("planner"); len(got) != 0 {
		t.Fatalf("restart within the window ran %+v", got)
	}
	if next := h.s.Snapshot()[0].Next; !next.Equal(wantNext.Add(24 * time.Hour)) {
		t.Fatalf("next = %v, want %v", next, wantNext.Add(24*time.Hour))
	}
}

// TestCronAddValidates: a schedule replaces the interval, and one that
// never fires is refused.
func TestCronAddValidates(t *testing.T) {
	s := scheduler.New(scheduler.Options{Clock: schedtest.NewClock(t0)})
	noop := func(j scheduler.Job) scheduler.Job {
		j.Run = func(_ context.Context, _ scheduler.Tick) error { return nil }
		return j
	}
	if err := s.Add(noop(scheduler.Job{Project: "p", Role: "planner", Schedule: cronSchedule(t, "@daily")})); err != nil {
		t.Errorf("scheduled job without interval refused: %v", err)
	}
	if err := s.Add(noop(scheduler.Job{Project: "p", Role: "gardener", Schedule: never{}})); err == nil {
		t.Error("a schedule that never fires was accepted")
	}
}

type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }
func (never) String() string           { return "never" }

// TestCronBackoff: failures push a scheduled job back by its period
// doubled each time, up to the cap, landing on the schedule's windows;
// a success brings the schedule back.
func TestCronBackoff(t *testing.T) {
	clk := schedtest.NewClock(t0)
	var mu sync.Mutex
	var dues []time.Duration
	failing := true
	job := scheduler.Job{Project: "p", Role: "planner", Schedule: cronSchedule(t, "*/1 * * * *"),
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
		MaxBackoff: 4 * time.Minute, Jitter: func(d time.Duration) time.Duration { return d }}, job)
	h.start()
	h.walk(10*time.Minute, 30*time.Second, 0)
	mu.Lock()
	got := fmt.Sprint(dues)
	failing = false
	mu.Unlock()
	// 0 fails; 1m fails (held 2m); 3m fails (held 4m); 7m fails (held 4m, the cap).
	if want := "[0s 1m0s 3m0s 7m0s]"; got != want {
		t.Fatalf("runs at %s, want %s", got, want)
	}
	h.walk(3*time.Minute, 30*time.Second, 0)
	mu.Lock()
	got = fmt.Sprint(dues)
	mu.Unlock()
	if want := "[0s 1m0s 3m0s 7m0s 11m0s 12m0s 13m0s]"; got != want {
		t.Fatalf("runs at %s, want %s", got, want)
	}
}
