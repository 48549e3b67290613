package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/webhook"
)

// sessionAgent stands in for the dev agent: its tick starts one long
// "session" (a sleep in its own process group, as lib/claude runs claude)
// in background work, and records the outcome when the session ends.
type sessionAgent struct{ pidFile string }

func (s sessionAgent) Tick(ctx context.Context, run *agent.Run) error {
	run.Go(ctx, "issue-1", func(ctx context.Context) {
		start := time.Now()
		cmd := exec.CommandContext(ctx, "sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			run.Log.Error().Err(err).Msg("start session")
			return
		}
		_ = os.WriteFile(s.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
		err := cmd.Wait()
		rec := ledger.Record{Start: start, Issue: 1, SessionID: "fake-session", Reason: ledger.ReasonDone}
		if ctx.Err() != nil {
			rec.Reason, rec.Code = ledger.ReasonInterrupted, ledger.CodeEngineShutdown
		} else if err != nil {
			rec.Reason, rec.Code = ledger.ReasonEngineError, ledger.CodeClaudeCrashed
		}
		// Recording must survive the cancellation that ended the session.
		if err := run.Record(rec); err != nil {
			run.Log.Error().Err(err).Msg("record outcome")
		}
	})
	return nil
}

func sessionRegistry(dataDir string) func() daemon.Registry {
	return func() daemon.Registry {
		return daemon.Registry{
			config.RoleDev: func(daemon.Deps) (agent.Agent, error) {
				return sessionAgent{pidFile: filepath.Join(dataDir, "session.pid")}, nil
			},
		}
	}
}

// TestDaemonHelperProcess is the daemon run as a child process by
// TestDaemonSIGTERM; it does nothing in a normal test run.
func TestDaemonHelperProcess(t *testing.T) {
	if os.Getenv("DISINTO_DAEMON_HELPER") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	a := &app{stdout: os.Stdout, stderr: os.Stderr, env: os.Environ()}
	root := a.rootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "daemon" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(a.daemonCmdWith(sessionRegistry(os.Getenv("DISINTO_DATA_DIR"))))
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestDaemonSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon process")
	}
	dir := t.TempDir()
	data := sessionDataDir(t)
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	const secret = "hook-secret"
	// Not root (a developer's machine): accept unisolated sessions.
	env := []string{"DISINTO_WEBHOOK_SECRET=" + secret, "AGENT_ROLES=dev", "DISINTO_DATA_DIR=" + data, "DISINTO_ALLOW_UNISOLATED_SESSIONS=1"}
	flags := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none.env"), "--data-dir", data}

	const grace = time.Second
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestDaemonHelperProcess$", "--", "daemon",
		"--listen", "127.0.0.1:0", "--status-listen", "127.0.0.1:0", "--grace", grace.String()}, flags...)...)
	cmd.Env = append(append(os.Environ(), "DISINTO_DAEMON_HELPER=1"), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("daemon output:\n%s", out.String())
		}
	})

	var info daemon.Info
	waitFor(t, "daemon.json", 30*time.Second, func() bool { var ok bool; info, ok = daemon.ReadInfo(data); return ok })

	// A second daemon on the same data dir is refused.
	if code, _, errOut := runCLI(t, env, append([]string{"daemon", "--listen", "127.0.0.1:0", "--status-listen", "127.0.0.1:0"}, flags...)...); code != exitFailure || !strings.Contains(errOut, "in use by another disinto process") {
		t.Fatalf("second daemon: code %d, stderr %q", code, errOut)
	}

	// Wake the dev job with a signed webhook instead of waiting for its slot.
	body := []byte(`{"action":"label_updated","issue":{"number":1},"repository":{"full_name":"disinto-admin/example"}}`)
	req, _ := http.NewRequest("POST", "http://"+info.Listen+webhook.Path, bytes.NewReader(body))
	req.Header.Set("X-Forgejo-Event-Type", "issue_label")
	req.Header.Set("X-Forgejo-Signature", "bad")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad signature: status %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", "http://"+info.Listen+webhook.Path, bytes.NewReader(body))
	req.Header.Set("X-Forgejo-Event-Type", "issue_label")
	req.Header.Set("X-Forgejo-Signature", webhook.Sign([]byte(secret), body))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signed webhook: status %d", resp.StatusCode)
	}

	var pid int
	waitFor(t, "the session to start", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(data, "session.pid"))
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	code, statusOut, _ := runCLI(t, env, append([]string{"status", "--json"}, flags...)...)
	if code != exitOK || !strings.Contains(statusOut, `"key": "issue-1"`) {
		t.Fatalf("live status: code %d\n%s", code, statusOut)
	}
	wantSessions := `"sessions": "isolated"`
	if os.Geteuid() != 0 {
		wantSessions = `"sessions": "unisolated"`
	}
	if !strings.Contains(statusOut, wantSessions) {
		t.Errorf("live status does not say how sessions run (%s):\n%s", wantSessions, statusOut)
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("daemon exit: %v", err)
		}
	case <-time.After(grace + 15*time.Second):
		t.Fatal("daemon did not exit after SIGTERM")
	}
	took := time.Since(start)
	t.Logf("daemon exited %v after SIGTERM (grace %v)", took.Round(time.Millisecond), grace)
	if took > grace+5*time.Second {
		t.Errorf("daemon took %v to exit, grace %v", took, grace)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("session process group %d still exists: %v", pid, err)
	}
	recs, _, err := ledger.Read(filepath.Join(data, "ledger"), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonInterrupted || recs[0].Issue != 1 || recs[0].Role != "dev" {
		t.Fatalf("ledger = %+v, want one interrupted record for issue 1", recs)
	}

	// status and logs work on the data dir the daemon left behind.
	code, statusOut, errOut := runCLI(t, env, append([]string{"status"}, flags...)...)
	if code != exitOK || !strings.Contains(statusOut, "daemon: not running") || !strings.Contains(statusOut, "engine.shutdown") ||
		!strings.Contains(statusOut, "example  dev") {
		t.Fatalf("status: code %d\n%s\n%s", code, statusOut, errOut)
	}
	code, logsOut, errOut := runCLI(t, env, append([]string{"logs", "--agent", "daemon"}, flags...)...)
	if code != exitOK || !strings.Contains(logsOut, "[daemon] daemon stopped") || strings.Contains(logsOut, "[webhook]") {
		t.Fatalf("logs: code %d\n%s\n%s", code, logsOut, errOut)
	}
	code, logsOut, _ = runCLI(t, env, append([]string{"logs", "--agent", "webhook"}, flags...)...)
	if code != exitOK || !strings.Contains(logsOut, "bad signature") || !strings.Contains(logsOut, "webhook triggered agent") {
		t.Fatalf("webhook logs: code %d\n%s", code, logsOut)
	}
}

func TestAgentRolesSelectJobs(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	reg := daemon.Registry{}
	for _, r := range config.ScheduledRoles() {
		reg[r] = func(daemon.Deps) (agent.Agent, error) { return sessionAgent{}, nil }
	}
	for _, tc := range []struct{ roles, want string }{
		{"dev", "example/dev"},
		{"review dev", "example/dev,example/review"},
		{"", "example/architect,example/dev,example/gardener,example/planner,example/predictor,example/review,example/supervisor"},
	} {
		_, d := testDaemon(t, filepath.Join(dir, "projects"), []string{"AGENT_ROLES=" + tc.roles}, reg)
		var got []string
		for _, j := range d.Scheduler().Snapshot() {
			got = append(got, j.Project+"/"+j.Role)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("AGENT_ROLES=%q: jobs %v, want %s", tc.roles, got, tc.want)
		}
	}
}

func TestAgentPauseCLI(t *testing.T) {
	data, projects := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(projects, "alpha.toml"), "name = \"alpha\"\nrepo = \"acme/alpha\"\n")
	if code, out, errOut := runCLI(t, nil, "agent", "pause", "dev", "--project", "alpha", "--data-dir", data, "--projects-dir", projects,
		"--env-file", filepath.Join(projects, "none.env")); code != exitOK || !strings.Contains(out, "dev paused for project alpha") {
		t.Logf("stderr: %s", errOut)
		t.Fatalf("pause: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, nil, "agent", "list", "--data-dir", data); code != exitOK || !strings.Contains(out, "alpha") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _, _ := runCLI(t, nil, "agent", "pause", "deployer", "--data-dir", data); code != exitUsage {
		t.Fatalf("unknown role: %d", code)
	}
	if code, out, _ := runCLI(t, nil, "agent", "resume", "dev", "--data-dir", data); code != exitOK || !strings.Contains(out, "resumed for all") {
		t.Fatalf("resume: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, nil, "agent", "list", "--data-dir", data); code != exitOK || !strings.Contains(out, "no agent is paused") {
		t.Fatalf("list after resume: %d %q", code, out)
	}
}

// testDaemon builds the daemon of the projects under projectsDir with env
// and registry reg, on a data dir of its own, closed when the test ends.
func testDaemon(t *testing.T, projectsDir string, env []string, reg daemon.Registry) (*app, *daemon.Daemon) {
	t.Helper()
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, env: env, projectsDir: projectsDir,
		envFile: filepath.Join(filepath.Dir(projectsDir), "none"), dataDir: sessionDataDir(t)}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.newDaemon(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return a, d
}

// newDaemon builds, without running it, the daemon `disinto daemon` would
// run with a's settings and the constructors of reg.
func (a *app) newDaemon(cfg *config.Config, reg daemon.Registry) (*daemon.Daemon, error) {
	co, err := a.coreOptions()
	if err != nil {
		return nil, err
	}
	return daemon.New(cfg, co, reg)
}

func TestDaemonListenDefaults(t *testing.T) {
	tests := []struct {
		name               string
		env                []string
		listen, statusAddr string
	}{
		{name: "defaults are loopback", listen: "127.0.0.1:8080", statusAddr: "127.0.0.1:8081"},
		{name: "environment", env: []string{"DISINTO_LISTEN=:9000", "DISINTO_STATUS_LISTEN=127.0.0.1:9001"},
			listen: ":9000", statusAddr: "127.0.0.1:9001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &app{env: tt.env}
			cmd := a.daemonCmd()
			if got := cmd.Flag("listen").DefValue; got != tt.listen {
				t.Errorf("--listen defaults to %q, want %q", got, tt.listen)
			}
			if got := cmd.Flag("status-listen").DefValue; got != tt.statusAddr {
				t.Errorf("--status-listen defaults to %q, want %q", got, tt.statusAddr)
			}
		})
	}
}
