package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestSystemShutdownMidSession stops the daemon with SIGTERM while a dev
// session's tool is still running: after the grace period the daemon
// cancels the session, kills the claude CLI and everything it started,
// and exits 0; the issue stays claimed, and the next run resumes the same
// conversation instead of losing the work.
func TestSystemShutdownMidSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	start := time.Now()
	t.Cleanup(func() { t.Logf("TestSystemShutdownMidSession took %s", time.Since(start).Round(time.Second)) })
	y := bootSystem(t, 2*time.Second, claudetest.Scenario{Name: "sys-slow", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("timeout 317 tail -f /dev/null")),
		// Never asked: the CLI closes the interrupted tool call with an
		// assistant message of its own, so the resumed session's first
		// request is at turn 2.
		claudetest.Text("(not reached)"),
		// The resumed session (after the restart) finishes the work.
		implement("slow.txt", "done at last"),
		claudetest.Text("Done."),
	}})
	w := &sysWatch{t: t, ctx: testCtx(t), admin: y.srv.Admin(t).Repo("acme", "widgets"), died: y.died}
	n := w.backlogIssue("Take a while", "scenario: sys-slow\n\nTake your time.")

	rig.Await(t, "the session's tool running", 3*time.Minute, y.died, func() bool {
		return len(procsIn(t, y.Data)) > 0 && len(procsRunning(t, "timeout\x00317")) > 0
	})
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, y.d.Out.String())
	}
	out := y.d.Out.String()
	if !strings.Contains(out, "grace period over; cancelling running sessions") {
		t.Errorf("the daemon did not cancel the session after its grace:\n%s", out)
	}
	// The session's process group is gone with the daemon.
	rig.Await(t, "no process of the session left", 10*time.Second, nil, func() bool {
		return len(procsIn(t, y.Data)) == 0 && len(procsRunning(t, "timeout\x00317")) == 0
	})

	// Not a terminal outcome: the issue's one ledger record comes when it
	// ends, with the interrupted session's cost included.
	if recs := ledgerRecords(t, y.Data); len(recs) != 0 {
		t.Errorf("ledger after the interrupted session: %+v", recs)
	}
	if !strings.Contains(out, "session interrupted by shutdown; it resumes after the restart") {
		t.Errorf("the dev agent did not log the interruption:\n%s", out)
	}
	i, err := w.admin.GetIssue(w.ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if i.State != forge.StateOpen || !i.HasLabel(forge.LabelInProgress) || i.HasLabel(forge.LabelBlocked) || !i.AssignedTo("dev-bot") {
		t.Errorf("the interrupted issue is not left claimed for a resume: %+v", i)
	}

	// The next run resumes the same conversation and opens the pull request.
	y.MustRun(t, y.daemonEnv, "run", "dev", "--project", "widgets", "--once")
	reqs := y.model.MessageRequests("sys-slow")
	if last := reqs[len(reqs)-1]; last.Turn != 3 || !anyText(reqs, "The orchestrator restarted while you were working") {
		t.Errorf("the restart did not resume the session: %d requests, last at turn %d", len(reqs), last.Turn)
	}
	if ps, err := w.admin.ListPulls(w.ctx, forge.StateOpen); err != nil || len(ps) != 1 || ps[0].Head != branch(n) {
		t.Errorf("pull requests after the resumed session: %+v %v", ps, err)
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
}

// procsIn lists the processes whose working directory is under dir.
func procsIn(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range procDirs(t) {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, p)
		}
	}
	return out
}

// procsRunning lists the processes whose NUL-separated command line
// starts with cmdline.
func procsRunning(t testing.TB, cmdline string) []string {
	t.Helper()
	var out []string
	for _, p := range procDirs(t) {
		b, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err == nil && strings.HasPrefix(string(b), cmdline) {
			out = append(out, p)
		}
	}
	return out
}

func procDirs(t testing.TB) []string {
	t.Helper()
	ds, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
