package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// manualNow is a clock that moves only when told.
type manualNow struct {
	mu sync.Mutex
	t  time.Time
}

func (m *manualNow) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

func (m *manualNow) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t = m.t.Add(d)
}

var beat0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// heartbeat returns the heartbeat with key, if one is running.
func heartbeat(rt *agent.Runtime, key string) (agent.Heartbeat, bool) {
	for _, h := range rt.Heartbeats() {
		if h.Key == key {
			return h, true
		}
	}
	return agent.Heartbeat{}, false
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHeartbeatsOfTicksAndWork: a tick has a heartbeat while it runs, its
// background work one of its own until it returns; agent steps move
// last_progress_at, and silence past StallAfter is a stall.
func TestHeartbeatsOfTicksAndWork(t *testing.T) {
	clk := &manualNow{t: beat0}
	rt := agent.New(agent.Options{Ledger: &ledgertest.Memory{}, Log: logx.Nop(), Now: clk.Now, StallAfter: 10 * time.Minute})
	release, stepped := make(chan struct{}), make(chan struct{})
	var inTick agent.Heartbeat
	err := rt.Tick(t.Context(), tickFunc(func(ctx context.Context, run *agent.Run) error {
		inTick, _ = heartbeat(rt, "tick")
		run.Go(ctx, "issue-7", func(ctx context.Context) {
			clk.Advance(time.Minute)
			agent.Step(ctx, "push")
			close(stepped)
			<-release
		})
		return nil
	}), proj, "dev", agent.CauseSchedule)
	if err != nil {
		t.Fatal(err)
	}
	if inTick.Run == "" || inTick.Project != "alpha" || inTick.Role != "dev" || !inTick.StartedAt.Equal(beat0) || inTick.Stalled {
		t.Errorf("tick heartbeat = %+v", inTick)
	}
	if _, ok := heartbeat(rt, "tick"); ok {
		t.Error("the tick's heartbeat outlived the tick")
	}
	<-stepped
	h, ok := heartbeat(rt, "issue-7")
	if !ok || h.Step != "push" || !h.LastProgressAt.Equal(beat0.Add(time.Minute)) || h.Run != inTick.Run || h.Stalled {
		t.Fatalf("work heartbeat after a step = %+v (%v)", h, ok)
	}
	clk.Advance(10 * time.Minute)
	if h, _ := heartbeat(rt, "issue-7"); !h.Stalled || h.Silent(clk.Now()) != 10*time.Minute {
		t.Errorf("silent for 10 minutes, heartbeat = %+v", h)
	}
	close(release)
	if err := rt.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hs := rt.Heartbeats(); len(hs) != 0 {
		t.Errorf("heartbeats after the work ended: %+v", hs)
	}
	agent.Step(context.Background(), "nothing") // outside work: no effect, no panic
}

// TestHeartbeatOfRealSession runs the real claude CLI against the scripted
// model server inside background work: the heartbeat carries the
// session's process group and deadline, stream events move it, and while
// the session prints nothing (a tool that waits) it goes stale.
func TestHeartbeatOfRealSession(t *testing.T) {
	_, url := claudetest.Start(t, claudetest.Scenario{
		Name: "quiet-tool",
		Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(`touch STARTED; while [ ! -e RELEASE ]; do sleep 0.1; done; echo released`)),
			claudetest.Text("The tool finished."),
		},
	})
	e, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: url, APIKey: "sk-test-not-a-real-key", MaxSessions: 1}},
		BaseEnv:       claudetest.Env(t),
		Timeout:       3 * time.Minute,
		TranscriptDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := sandboxtest.Dir(t, "worktree")
	clk := &manualNow{t: beat0}
	rt := agent.New(agent.Options{Ledger: &ledgertest.Memory{}, Log: logx.Nop(), Now: clk.Now, StallAfter: 5 * time.Minute})
	var res claude.Result
	var runErr error
	started := time.Now()
	err = rt.Tick(t.Context(), tickFunc(func(ctx context.Context, run *agent.Run) error {
		run.Go(ctx, "issue-1", func(ctx context.Context) {
			res, runErr = e.Run(ctx, claude.Invocation{Prompt: "scenario: quiet-tool\nRun the tool.", Dir: dir, MaxTurns: 5, Label: "dev-issue-1"})
		})
		return nil
	}), proj, "dev", agent.CauseSchedule)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the tool to run", func() bool {
		_, err := os.Stat(filepath.Join(dir, "STARTED"))
		return err == nil
	})
	h, ok := heartbeat(rt, "issue-1")
	if !ok {
		t.Fatal("no heartbeat for the running session")
	}
	if h.PGID <= 0 || h.Sessions != 1 || h.Events == 0 {
		t.Fatalf("heartbeat during the session = %+v", h)
	}
	if pg, err := syscall.Getpgid(h.PGID); err != nil || pg != h.PGID {
		t.Errorf("pgid %d is not a live process group leader: %d, %v", h.PGID, pg, err)
	}
	if h.Deadline.Before(started.Add(3*time.Minute)) || h.Deadline.After(time.Now().Add(3*time.Minute)) {
		t.Errorf("deadline %v is not the run's 3 minute timeout", h.Deadline)
	}
	if h.Stalled {
		t.Errorf("stalled at once: %+v", h)
	}

	// The tool waits and the CLI prints nothing: six quiet minutes later
	// the session is stalled.
	clk.Advance(6 * time.Minute)
	quiet, _ := heartbeat(rt, "issue-1")
	if !quiet.Stalled || quiet.Events != h.Events || !quiet.LastProgressAt.Equal(h.LastProgressAt) {
		t.Errorf("silent session: %+v, want stalled with the events of %+v", quiet, h)
	}

	// The tool ends; the CLI prints the result and the model's answer.
	if err := os.WriteFile(filepath.Join(dir, "RELEASE"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the session to print again", func() bool {
		h, ok := heartbeat(rt, "issue-1")
		return !ok || h.Events > quiet.Events
	})
	if h, ok := heartbeat(rt, "issue-1"); ok && (h.Stalled || !h.LastProgressAt.Equal(beat0.Add(6*time.Minute))) {
		t.Errorf("session printing again: %+v, want fresh progress", h)
	}
	if err := rt.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if runErr != nil || res.Text != "The tool finished." {
		t.Fatalf("session: %+v, %v", res, runErr)
	}
	if _, ok := heartbeat(rt, "issue-1"); ok {
		t.Error("heartbeat outlived its work")
	}
}
