package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/ledger"
)

// mergeAgent finishes one unit of work in the background and records it.
type mergeAgent struct{}

func (mergeAgent) Tick(ctx context.Context, run *agent.Run) error {
	run.Go(ctx, "issue-5", func(context.Context) {
		_ = run.Record(ledger.Record{Issue: 5, PR: 6, Reason: ledger.ReasonMerged, CostUSD: 0.42, Turns: 7})
	})
	return nil
}

func TestRunOnce(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	data := sessionDataDir(t)
	flags := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", data}

	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	root := a.rootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(a.runCmdWith(func() daemon.Registry {
		return daemon.Registry{config.RoleDev: func(daemon.Deps) (agent.Agent, error) { return mergeAgent{}, nil }}
	}))
	root.SetArgs(append([]string{"run", "dev", "--project", "example", "--once"}, flags...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	recs, _, err := ledger.Read(filepath.Join(data, "ledger"), ledger.Filter{})
	if err != nil || len(recs) != 1 || recs[0].PR != 6 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger after run --once: %+v %v", recs, err)
	}

	code, statusOut, _ := runCLI(t, nil, append([]string{"status"}, flags...)...)
	if code != exitOK || !strings.Contains(statusOut, "PR #6") || !strings.Contains(statusOut, "cost today: $0.42") {
		t.Fatalf("status: %d\n%s", code, statusOut)
	}

	// A role without an implementation says so.
	a = &app{stdout: &out, stderr: &errb}
	empty := a.runCmdWith(func() daemon.Registry { return nil })
	empty.SetArgs([]string{"review", "--project", "example"})
	a.projectsDir, a.envFile, a.dataDir = flags[1], flags[3], flags[5]
	if err := empty.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "no implementation") {
		t.Fatalf("unimplemented role: %v", err)
	}
	if code, _, _ := runCLI(t, nil, append([]string{"run", "dev", "--project", "nope"}, flags...)...); code != exitUsage {
		t.Fatalf("unknown project: %d", code)
	}
}

// interruptAgent starts work that, once cancelled, cleans up (records
// that it was interrupted) only when the test lets it.
type interruptAgent struct {
	started, cancelled, proceed chan struct{}
}

func (a interruptAgent) Tick(ctx context.Context, run *agent.Run) error {
	run.Go(ctx, "issue-9", func(ctx context.Context) {
		close(a.started)
		<-ctx.Done()
		close(a.cancelled)
		<-a.proceed
		_ = run.Record(ledger.Record{Issue: 9, Reason: ledger.ReasonInterrupted, Code: ledger.CodeEngineShutdown})
	})
	return nil
}

// Interrupting run --once cancels the work, then waits for it to clean up
// (kill its process group, record the interruption) before closing the
// ledger and releasing the data dir lock.
func TestRunOnceInterruptWaitsForCleanup(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	data := sessionDataDir(t)
	ag := interruptAgent{started: make(chan struct{}), cancelled: make(chan struct{}), proceed: make(chan struct{})}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	cmd := a.runCmdWith(func() daemon.Registry {
		return daemon.Registry{config.RoleDev: func(daemon.Deps) (agent.Agent, error) { return ag, nil }}
	})
	cmd.SetArgs([]string{"dev", "--project", "example"})
	a.projectsDir, a.envFile, a.dataDir = filepath.Join(dir, "projects"), filepath.Join(dir, "none"), data

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	<-ag.started
	cancel()
	<-ag.cancelled
	close(ag.proceed)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("run after interrupt: %v", err)
	}
	recs, _, err := ledger.Read(filepath.Join(data, "ledger"), ledger.Filter{})
	if err != nil || len(recs) != 1 || recs[0].Issue != 9 || recs[0].Reason != ledger.ReasonInterrupted {
		t.Fatalf("the interrupted work's record is missing: %+v %v\n%s", recs, err, errb.String())
	}
}
