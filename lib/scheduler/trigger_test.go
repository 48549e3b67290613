package scheduler_test

import (
	"testing"
	"time"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/scheduler/schedtest"
)

// A lone trigger runs its job after Settle; a trigger soon after it waits
// the full Debounce, so a burst of events still costs few runs.
func TestLoneTriggerSettlesBurstDebounces(t *testing.T) {
	clk := schedtest.NewClock(t0)
	h := newHarnessWith(t, scheduler.Options{Clock: clk, Log: logx.Nop(), Settle: 100 * time.Millisecond, Debounce: time.Second},
		scheduler.Job{Project: "p", Role: "dev", Interval: time.Hour, FirstRun: scheduler.FirstRunAfterInterval})
	h.start()
	h.s.Trigger("p", "dev")
	h.walk(100*time.Millisecond, 100*time.Millisecond, 0)
	if n := len(h.got("dev")); n != 1 {
		t.Fatalf("a lone trigger: %d runs after Settle, want 1", n)
	}
	// The burst goes on: its next trigger waits Debounce.
	h.s.Trigger("p", "dev")
	h.s.Trigger("p", "dev")
	h.walk(900*time.Millisecond, 100*time.Millisecond, 0)
	if n := len(h.got("dev")); n != 1 {
		t.Fatalf("a burst's second trigger ran before Debounce: %d runs", n)
	}
	h.walk(100*time.Millisecond, 100*time.Millisecond, 0)
	if n := len(h.got("dev")); n != 2 {
		t.Fatalf("a burst's later triggers: %d runs after Debounce, want 2", n)
	}
	// After a quiet spell, a trigger settles quickly again.
	h.walk(2*time.Second, time.Second, 0)
	h.s.Trigger("p", "dev")
	h.walk(100*time.Millisecond, 100*time.Millisecond, 0)
	if n := len(h.got("dev")); n != 3 {
		t.Fatalf("a trigger after a quiet spell: %d runs after Settle, want 3", n)
	}
}
