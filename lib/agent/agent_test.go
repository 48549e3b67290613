package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/logx"
)

// tickFunc adapts a function to agent.Agent.
type tickFunc func(ctx context.Context, run *agent.Run) error

func (f tickFunc) Tick(ctx context.Context, run *agent.Run) error { return f(ctx, run) }

type codedErr struct{}

func (codedErr) Error() string            { return "forge said 502" }
func (codedErr) OutcomeCode() ledger.Code { return ledger.CodeForgeUnavailable }

var proj = &config.Project{Name: "alpha"}

func newRuntime(t *testing.T) (*agent.Runtime, *ledgertest.Memory, *agent.Enablement) {
	t.Helper()
	led := &ledgertest.Memory{}
	en := agent.NewEnablement(filepath.Join(t.TempDir(), "agents.json"), nil)
	return agent.New(agent.Options{Ledger: led, Enablement: en, Log: logx.Nop()}), led, en
}

func TestTickFailuresAreRecorded(t *testing.T) {
	cases := []struct {
		name   string
		tick   tickFunc
		reason ledger.Reason
		code   ledger.Code
	}{
		{"panic", func(context.Context, *agent.Run) error { panic("nil map") }, ledger.ReasonEngineError, ledger.CodeEnginePanic},
		{"plain error", func(context.Context, *agent.Run) error { return errors.New("x") }, ledger.ReasonEngineError, ledger.CodeEngineTick},
		{"coded error", func(context.Context, *agent.Run) error { return codedErr{} }, ledger.ReasonEngineError, ledger.CodeForgeUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, led, _ := newRuntime(t)
			if err := rt.Tick(context.Background(), tc.tick, proj, config.RoleDev, agent.CauseSchedule); err == nil {
				t.Fatal("Tick returned nil for a failed tick")
			}
			recs := led.Records()
			if len(recs) != 1 || recs[0].Reason != tc.reason || recs[0].Code != tc.code ||
				recs[0].Project != "alpha" || recs[0].Role != "dev" || recs[0].Run == "" {
				t.Fatalf("records = %+v", recs)
			}
		})
	}
}

func TestIdleTickRecordsNothing(t *testing.T) {
	rt, led, _ := newRuntime(t)
	err := rt.Tick(context.Background(), tickFunc(func(context.Context, *agent.Run) error { return nil }), proj, config.RoleDev, agent.CauseSchedule)
	if err != nil || len(led.Records()) != 0 {
		t.Fatalf("idle tick: err=%v records=%d", err, len(led.Records()))
	}
}

func TestRecordDefaults(t *testing.T) {
	rt, led, _ := newRuntime(t)
	err := rt.Tick(context.Background(), tickFunc(func(_ context.Context, run *agent.Run) error {
		return run.Record(ledger.Record{Issue: 7, Reason: ledger.ReasonMerged, CostUSD: 1.5})
	}), proj, config.RoleDev, agent.CauseEvent)
	if err != nil {
		t.Fatal(err)
	}
	r := led.Records()[0]
	if r.Project != "alpha" || r.Role != "dev" || r.Start.IsZero() || r.End.Before(r.Start) || r.Issue != 7 {
		t.Fatalf("record = %+v", r)
	}
	// A failure without a code is refused.
	err = rt.Tick(context.Background(), tickFunc(func(_ context.Context, run *agent.Run) error {
		return run.Record(ledger.Record{Reason: ledger.ReasonBlocked})
	}), proj, config.RoleDev, agent.CauseEvent)
	if !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("uncoded failure: %v", err)
	}
}

func TestBackgroundWorkNoOverlapAndWait(t *testing.T) {
	rt, led, _ := newRuntime(t)
	release := make(chan struct{})
	var started []bool
	tick := tickFunc(func(ctx context.Context, run *agent.Run) error {
		started = append(started, run.Go(ctx, "issue-1", func(ctx context.Context) {
			<-release
			_ = run.Record(ledger.Record{Issue: 1, Reason: ledger.ReasonMerged})
		}))
		return nil
	})
	for range 2 {
		if err := rt.Tick(context.Background(), tick, proj, config.RoleDev, agent.CauseSchedule); err != nil {
			t.Fatal(err)
		}
	}
	if len(started) != 2 || !started[0] || started[1] {
		t.Fatalf("started = %v, want the second start refused", started)
	}
	if w := rt.Running(); len(w) != 1 || w[0].Key != "issue-1" {
		t.Fatalf("running = %+v", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	if err := rt.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with work running = %v", err)
	}
	cancel()
	close(release)
	if err := rt.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rt.Running()) != 0 || len(led.Records()) != 1 {
		t.Fatalf("after wait: running=%d records=%d", len(rt.Running()), len(led.Records()))
	}
}

// TestBusyFromGoUntilDone: work counts as busy as soon as Go returns
// true, for its own key, project and role only, until fn returns.
func TestBusyFromGoUntilDone(t *testing.T) {
	rt, _, _ := newRuntime(t)
	release := make(chan struct{})
	var busyAfterGo, otherKey bool
	tick := tickFunc(func(ctx context.Context, run *agent.Run) error {
		if run.Busy("issue-3") {
			t.Error("busy before any work started")
		}
		run.Go(ctx, "issue-3", func(context.Context) { <-release })
		busyAfterGo, otherKey = run.Busy("issue-3"), run.Busy("issue-4")
		return nil
	})
	if err := rt.Tick(context.Background(), tick, proj, config.RoleDev, agent.CauseSchedule); err != nil {
		t.Fatal(err)
	}
	if !busyAfterGo || otherKey {
		t.Fatalf("after Go: busy %v, other key busy %v", busyAfterGo, otherKey)
	}
	if !rt.Busy("alpha", config.RoleDev, "issue-3") || rt.Busy("alpha", config.RoleReview, "issue-3") || rt.Busy("beta", config.RoleDev, "issue-3") {
		t.Fatal("Busy does not scope work to its project and role")
	}
	close(release)
	if err := rt.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rt.Busy("alpha", config.RoleDev, "issue-3") {
		t.Fatal("busy after the work returned")
	}
}

func TestBackgroundPanicRecorded(t *testing.T) {
	rt, led, _ := newRuntime(t)
	_ = rt.Tick(context.Background(), tickFunc(func(ctx context.Context, run *agent.Run) error {
		run.Go(ctx, "issue-2", func(context.Context) { panic("boom") })
		return nil
	}), proj, config.RoleDev, agent.CauseSchedule)
	if err := rt.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if recs := led.Records(); len(recs) != 1 || recs[0].Code != ledger.CodeEnginePanic {
		t.Fatalf("records = %+v", recs)
	}
}

func TestPauseResume(t *testing.T) {
	rt, _, en := newRuntime(t)
	ticks := 0
	tick := tickFunc(func(context.Context, *agent.Run) error { ticks++; return nil })
	run := func(p *config.Project) error {
		return rt.Tick(context.Background(), tick, p, config.RoleDev, agent.CauseSchedule)
	}
	beta := &config.Project{Name: "beta"}

	if err := en.Pause(config.RoleDev, "alpha"); err != nil {
		t.Fatal(err)
	}
	if err := run(proj); !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("paused tick: %v", err)
	}
	if err := run(beta); err != nil || ticks != 1 {
		t.Fatalf("other project: %v, ticks %d", err, ticks)
	}
	if err := en.Pause(config.RoleDev, ""); err != nil {
		t.Fatal(err)
	}
	if err := run(beta); !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("paused everywhere: %v", err)
	}
	if err := en.Resume(config.RoleDev, "beta"); !errors.Is(err, agent.ErrPausedEverywhere) {
		t.Fatalf("resume one of a global pause: %v", err)
	}
	if err := en.Resume(config.RoleDev, ""); err != nil {
		t.Fatal(err)
	}
	if err := run(proj); err != nil || ticks != 2 {
		t.Fatalf("after resume: %v, ticks %d", err, ticks)
	}
	if ps, _ := en.List(); len(ps) != 0 {
		t.Fatalf("pauses left: %+v", ps)
	}
}
