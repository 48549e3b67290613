package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// noop is an agent whose tick does nothing.
type noop struct{}

func (noop) Tick(context.Context, *agent.Run) error { return nil }

// §6.7.1: memory crisis — the run past its deadline is terminated, the
// one within it is left alone, no new run starts until memory recovers.
func TestMemoryCrisisTerminatesOnlyOverdueRunsAndPauses(t *testing.T) {
	r := newRig(t)
	host := healthyHost()
	host.mem = Memory{AvailableMB: 400, TotalMB: 16000}
	r.o.Host = host
	overdue, within := sleeper(t), sleeper(t)
	now := r.clock.now()
	r.o.Heartbeats = fixedHeartbeats{
		{Agent: "dev", Project: "p", Key: "issue-1", PGID: overdue.Process.Pid, Deadline: now.Add(-10 * time.Minute)},
		{Agent: "dev", Project: "p", Key: "issue-2", PGID: within.Process.Pid, Deadline: now.Add(time.Hour)},
	}
	en := agent.NewEnablement(filepath.Join(r.data, "agents.json"), nil)
	r.o.Pauser = EnablementPauser{Enablement: en, Project: "p"}
	rt := agent.New(agent.Options{Enablement: en})
	p := &config.Project{Name: "p"}
	a := r.agent()
	out := r.run(a)
	if len(findings(out, RuleMemory)) != 1 {
		t.Fatalf("findings = %+v", out.Findings)
	}
	waitExit(t, overdue)
	if err := syscall.Kill(within.Process.Pid, 0); err != nil {
		t.Fatalf("the run within its deadline was touched: %v", err)
	}
	if err := rt.Tick(ctxT(t), noop{}, p, config.RoleDev, agent.CauseSchedule); !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("dev tick during the crisis = %v, want paused", err)
	}
	if err := rt.Tick(ctxT(t), noop{}, p, config.RoleSupervisor, agent.CauseSchedule); err != nil {
		t.Fatalf("the supervisor itself was paused: %v", err)
	}
	host.mem.AvailableMB = 4000
	r.run(a)
	if err := rt.Tick(ctxT(t), noop{}, p, config.RoleDev, agent.CauseSchedule); err != nil {
		t.Fatalf("dev tick after recovery = %v", err)
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := cmd.Process.Wait(); done <- err }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the overdue run's process group is still alive")
	}
}

// §6.7.4: a lock of a dead pid goes, one of a live pid stays.
func TestDeadLockRemovedLiveLockKept(t *testing.T) {
	r := newRig(t)
	cmd := exec.Command("git", "--version")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(r.data, "dev-poll.lock")
	live := filepath.Join(r.data, "daemon.lock")
	writeFile(t, dead, []byte(itoa(cmd.Process.Pid)+"\n"))
	writeFile(t, live, []byte(itoa(os.Getpid())+"\n"))
	out := r.run(r.agent())
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead lock still there: %v (findings %+v)", err, out.Findings)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live lock removed: %v", err)
	}
}

// §6.7.5: a checkout mid-rebase with no agent on it is repaired; with an
// agent's heartbeat on it, nothing is touched.
func TestBrokenRebaseAbortedUnlessHeld(t *testing.T) {
	for _, tc := range []struct {
		name string
		hb   func(dir string) fixedHeartbeats
	}{
		{"free", func(string) fixedHeartbeats { return fixedHeartbeats{} }},
		{"held", func(dir string) fixedHeartbeats {
			return fixedHeartbeats{{Agent: "dev", Project: "p", Key: "issue-3", Worktree: dir}}
		}},
		// Work that does not say where it runs may hold any checkout.
		{"somewhere", func(string) fixedHeartbeats { return fixedHeartbeats{{Agent: "review", Project: "p", Key: "pr-4"}} }},
	} {
		held := tc.name != "free"
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			dir := filepath.Join(r.data, "clones", "p", "dev-bot")
			newClone(t, dir)
			gitT(t, dir, "checkout", "-qb", "topic")
			writeFile(t, filepath.Join(dir, "f.txt"), []byte("topic\n"))
			gitT(t, dir, "commit", "-qam", "topic")
			gitT(t, dir, "checkout", "-q", "main")
			writeFile(t, filepath.Join(dir, "f.txt"), []byte("main\n"))
			gitT(t, dir, "commit", "-qam", "main")
			gitT(t, dir, "checkout", "-q", "topic")
			cmd := exec.Command("git", "rebase", "main")
			cmd.Dir = dir
			_ = cmd.Run() // stops on the conflict
			if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge")); err != nil {
				t.Fatalf("setup: no rebase in progress: %v", err)
			}
			r.o.Checkouts = []Checkout{{Dir: dir, Primary: "main"}}
			r.o.Heartbeats = tc.hb(dir)
			r.run(r.agent())
			_, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge"))
			head := strings.TrimSpace(gitT(t, dir, "rev-parse", "--abbrev-ref", "HEAD"))
			if held {
				if err != nil {
					t.Fatal("a held checkout was touched")
				}
				return
			}
			if err == nil || head != "main" {
				t.Fatalf("rebase in progress: %v, HEAD %s; want aborted, main", err == nil, head)
			}
			if st := gitT(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("not clean: %s", st)
			}
		})
	}
}

// §6.7.7 (and P4): a preserved worktree 30 h old is kept, an unpreserved
// one is removed.
func TestPreservedWorktreeKept(t *testing.T) {
	r := newRig(t)
	fp := r.forgeProject()
	ctx := ctxT(t)
	// An open pull request from branch wip-1: its worktree waits for CI or
	// a review, however old.
	if _, err := fp.Repo.CreateBranch(ctx, "wip-1", "main"); err != nil {
		t.Fatal(err)
	}
	if err := fp.Repo.CreateFiles(ctx, "wip-1", "wip", []forge.NewFile{{Path: "wip.txt", Content: []byte("x\n")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Repo.CreatePull(ctx, forge.NewPull{Title: "WIP", Head: "wip-1", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(r.data, "clones", "p", "dev-bot")
	newClone(t, clone)
	keep, drop, waiting := filepath.Join(r.data, "wt", "issue-1"), filepath.Join(r.data, "wt", "issue-2"), filepath.Join(r.data, "wt", "issue-3")
	gitT(t, clone, "worktree", "add", "-q", "--detach", keep)
	gitT(t, clone, "worktree", "add", "-q", "--detach", drop)
	gitT(t, clone, "worktree", "add", "-q", "-b", "wip-1", waiting)
	gitT(t, clone, "worktree", "lock", "--reason", "preserved for a human", keep)
	old := r.clock.now().Add(-30 * time.Hour)
	for _, d := range []string{keep, drop, waiting} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	r.o.Checkouts = []Checkout{{Dir: clone, Primary: "main"}}
	r.o.Heartbeats = fixedHeartbeats{}
	r.run(r.agent())
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("preserved worktree removed: %v", err)
	}
	if _, err := os.Stat(drop); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale worktree kept: %v", err)
	}
	if _, err := os.Stat(waiting); err != nil {
		t.Errorf("the worktree of an open pull request was removed: %v", err)
	}
}

// walker records the dev agent restarts it is asked for.
type walker struct{ prs []int64 }

func (w *walker) RestartPRWalk(_ context.Context, pr int64) error {
	w.prs = append(w.prs, pr)
	return nil
}

// §6.7.6: a pull request stale in three runs in a row is walked again
// exactly once; stale in two, nothing happens.
func TestStalePRWalkedOnceAfterThreeRuns(t *testing.T) {
	r := newRig(t)
	fp := r.forgeProject()
	ctx := ctxT(t)
	if _, err := fp.Repo.CreateBranch(ctx, "fix-1", "main"); err != nil {
		t.Fatal(err)
	}
	if err := fp.Repo.CreateFiles(ctx, "fix-1", "fix", []forge.NewFile{{Path: "fix.txt", Content: []byte("x\n")}}); err != nil {
		t.Fatal(err)
	}
	pr, err := fp.Repo.CreatePull(ctx, forge.NewPull{Title: "Fix", Head: "fix-1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fp.Repo.CreateStatus(ctx, pr.HeadSHA, forge.CommitStatus{Context: "ci", State: forge.CISuccess}); err != nil {
		t.Fatal(err)
	}
	w := &walker{}
	r.o.Walker = w
	r.clock.add(time.Hour) // the pull request was last updated an hour ago
	a := r.agent()
	for run := 1; run <= 2; run++ {
		r.run(a)
		r.clock.add(20 * time.Minute)
	}
	if len(w.prs) != 0 {
		t.Fatalf("walked after two stale runs: %v", w.prs)
	}
	for run := 3; run <= 4; run++ {
		r.run(a)
		r.clock.add(20 * time.Minute)
	}
	if len(w.prs) != 1 || w.prs[0] != pr.Number {
		t.Fatalf("walks = %v, want [%d] once", w.prs, pr.Number)
	}
}

// §6.7.8: with the forge unreachable the system checks and the journal
// still happen, and the snapshot says so; after two runs it is a P2
// finding.
func TestForgeUnreachable(t *testing.T) {
	r := newRig(t)
	c, err := forge.New(forge.Options{URL: "http://127.0.0.1:1", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	r.o.Forge = c.Repo("o", "p")
	a := r.agent()
	if out := r.run(a); len(findings(out, RuleForgeUnreached)) != 0 {
		t.Fatalf("a finding after one run: %+v", out.Findings)
	}
	out := r.run(a)
	got := findings(out, RuleForgeUnreached)
	if len(got) != 1 || got[0].Severity != P2 {
		t.Fatalf("findings = %+v", out.Findings)
	}
	st, _ := a.store.load()
	last := st.Snapshots[len(st.Snapshots)-1]
	if last.observed(SourceForge) || last.Memory.AvailableMB == 0 {
		t.Fatalf("snapshot = %+v", last)
	}
	data, err := os.ReadFile(out.Journal)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "## Supervisor run — "); n != 2 || !strings.Contains(string(data), "Forge: unreachable") {
		t.Fatalf("journal:\n%s", data)
	}
}

// countingAnalyst counts model requests.
type countingAnalyst struct{ n int }

func (c *countingAnalyst) Analyse(context.Context, *Snapshot, Finding) (Verdict, error) {
	c.n++
	return ParseVerdict([]byte(`{"summary": "the forge token expired", "findings": [{"priority": "P2", "finding": "401s", "evidence": "ledger", "proposed_action": "rotate the token", "needs_human": true}]}`))
}

// §6.7.9: a run in which no rule fires makes no model request.
func TestQuietRunAsksNoModel(t *testing.T) {
	r := newRig(t)
	r.forgeProject()
	an := &countingAnalyst{}
	r.o.Analyst = an
	r.o.Engine = requireEngine(t)
	out := r.run(r.agent())
	for _, f := range out.Findings {
		if f.Severity != Info {
			t.Fatalf("finding in a quiet run: %+v", f)
		}
	}
	if an.n != 0 {
		t.Fatalf("model asked %d times", an.n)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconvItoa(n) }
