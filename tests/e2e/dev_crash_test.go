package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// envDevChild makes TestDevDaemonChild act as a dev daemon: it ticks until
// it is killed.
const envDevChild = "DISINTO_E2E_DEV_CHILD"

// TestDevDaemonChild is the daemon process of TestDevCrashWhileWaitingForCI.
// Run normally it does nothing.
func TestDevDaemonChild(t *testing.T) {
	raw := os.Getenv(envDevChild)
	if raw == "" {
		return
	}
	var p botParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	b := startBot(t, p)
	ctx := context.Background()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if err := b.rt.Tick(ctx, b.a, b.proj, config.RoleDev, agent.CauseSchedule); err != nil {
			t.Logf("tick: %v", err)
		}
	}
}

func TestDevCrashWhileWaitingForCI(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-crash", Turns: fixTurns(0)})
	b := e.newBot("dev-bot")
	n := e.issue("Survive a crash", "scenario: dev-crash", forge.LabelBacklog)

	raw, err := json.Marshal(b.p)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestDevDaemonChild$", "-test.v")
	cmd.Env = append(os.Environ(), envDevChild+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(t.TempDir(), "child.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	// Wait (bounded) until the child waits for CI on an open pull request.
	deadline := time.After(4 * time.Minute)
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for b.stage(n) != dev.StageAwaitingCI {
		select {
		case <-deadline:
			log, _ := os.ReadFile(out.Name())
			t.Fatalf("child never reached awaiting_ci (stage %q):\n%s", b.stage(n), log)
		case err := <-done:
			t.Fatalf("child exited: %v", err)
		case <-poll.C:
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done

	// Restarted over the same data dir, the daemon finishes the issue.
	b2 := startBot(t, b.p)
	pr := e.onlyPull(branch(n))
	b2.greenToMerge(e, n, pr)
	if ps := e.allPulls(); len(ps) != 1 {
		t.Fatalf("%d pull requests, want 1", len(ps))
	}
	if i := e.getIssue(n); i.State != forge.StateClosed || i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("issue: %+v", i)
	}
	recs := b2.records()
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
	if sessions := len(e.model.MessageRequests("dev-crash")); sessions != 2 {
		t.Fatalf("%d model requests, want the 2 of one session", sessions)
	}
}
