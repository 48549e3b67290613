package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/runner"
)

// TestUndeclaredSecretIsAbsent: a job sees its declared secret as a file,
// and nothing of a secret it did not declare, whether that one sits in the
// dispatcher's environment or next to the declared one in its store. The
// job prints everything it can find; the outcome names only the declared
// secret, with its value masked.
func TestUndeclaredSecretIsAbsent(t *testing.T) {
	cli := engine(t)
	const (
		declared, declaredValue     = "DECLARED_TOKEN", "declared-value-7c1e9a"
		undeclared, undeclaredValue = "UNDECLARED_TOKEN", "undeclared-value-5f3b2d"
	)
	// The process that starts the runner holds the other secret.
	t.Setenv(undeclared, undeclaredValue)
	r := newRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:      "secret-probe",
		Kind:    runner.Mechanical,
		Secrets: map[string]string{declared: declaredValue},
		Env:     map[string]string{"PROBE": "environment"},
		Script: `echo "== env"; env
echo "== pid 1"; tr '\0' '\n' </proc/1/environ
echo "== files"; ls -la /run/secrets
for f in /run/secrets/*; do printf '%s=' "$f"; cat "$f"; echo; stat -c 'mode=%a uid=%u' "$f"; done
echo "== search"; grep -rl undeclared- /etc /tmp /run /home 2>/dev/null || echo none found`,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.Log)
	}
	t.Logf("the job's probe:\n%s", out.Log)
	if out.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", out.ExitCode, out.Log)
	}
	for _, want := range []string{
		"/run/secrets/" + declared + "=" + redact.Mask,
		"mode=400 uid=1000",
		"PROBE=environment",
		"none found",
	} {
		if !strings.Contains(out.Log, want) {
			t.Errorf("log lacks %q:\n%s", want, out.Log)
		}
	}
	for _, leak := range []string{declaredValue, undeclared, undeclaredValue} {
		if strings.Contains(out.Log, leak) {
			t.Errorf("log shows %q:\n%s", leak, out.Log)
		}
	}
	// The value was only in the file: no variable holds it.
	for _, line := range strings.Split(out.Log, "\n") {
		if strings.HasPrefix(line, declared+"=") {
			t.Errorf("the secret is in the environment: %s", line)
		}
	}
	requireRemoved(t, cli, out.Container)
}

// TestJobIsConfined: the job runs as the unprivileged user with no
// capabilities, on a read-only root, without the Docker socket and without
// a network.
func TestJobIsConfined(t *testing.T) {
	cli := engine(t)
	r := newRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:   "confined",
		Kind: runner.Mechanical,
		Script: `echo "uid=$(id -u) gid=$(id -g)"
grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status
echo "root=$(awk '$2 == "/" { split($4, o, ","); print o[1] }' /proc/mounts)"
if touch /tmp/probe; then echo tmp-writable; fi
if [ -e /var/run/docker.sock ] || [ -e /run/docker.sock ]; then echo socket-present; else echo socket-absent; fi
echo "net=$(ls /sys/class/net | tr '\n' ' ')"`,
	})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d\n%s", err, out.ExitCode, out.Log)
	}
	for _, want := range []string{
		"uid=1000 gid=1000",
		"CapEff:\t0000000000000000",
		"CapPrm:\t0000000000000000",
		"NoNewPrivs:\t1",
		"root=ro\n",
		"tmp-writable",
		"socket-absent",
		"net=lo \n",
	} {
		if !strings.Contains(out.Log, want) {
			t.Errorf("log lacks %q:\n%s", want, out.Log)
		}
	}
	requireRemoved(t, cli, out.Container)
}

// TestTimeoutKillsAndRemoves: a job past its timeout is killed, reported
// as timed out with what it wrote so far, and its container removed.
func TestTimeoutKillsAndRemoves(t *testing.T) {
	cli := engine(t)
	r := newRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:      "sleeper",
		Kind:    runner.Mechanical,
		Script:  "echo started; exec sleep 600",
		Timeout: 3 * time.Second,
	})
	if !errors.Is(err, runner.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v (exit %d)\n%s", err, out.ExitCode, out.Log)
	}
	if !out.TimedOut || out.ExitCode != 137 {
		t.Errorf("timed out %v, exit %d; want true, 137 (SIGKILL)", out.TimedOut, out.ExitCode)
	}
	if !strings.Contains(out.Log, "started") {
		t.Errorf("log lacks the output before the timeout:\n%s", out.Log)
	}
	requireRemoved(t, cli, out.Container)
}

// TestFailingJobReportsExitCodeAndLog: a script that fails returns its
// exit code and both of its output streams, without an error.
func TestFailingJobReportsExitCodeAndLog(t *testing.T) {
	cli := engine(t)
	r := newRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:     "failing",
		Kind:   runner.Mechanical,
		Script: "echo to-stdout; echo to-stderr >&2; exit 3",
	})
	if err != nil {
		t.Fatalf("a failing job is an outcome, not an error: %v", err)
	}
	if out.ExitCode != 3 || out.TimedOut {
		t.Errorf("exit %d, timed out %v; want 3, false", out.ExitCode, out.TimedOut)
	}
	for _, want := range []string{"to-stdout", "to-stderr"} {
		if !strings.Contains(out.Log, want) {
			t.Errorf("log lacks %q:\n%s", want, out.Log)
		}
	}
	if out.Started.IsZero() || out.Ended.Before(out.Started) {
		t.Errorf("started %v, ended %v", out.Started, out.Ended)
	}
	requireRemoved(t, cli, out.Container)
}

// TestLimitsAreSetOnTheContainer inspects a running job's container
// through the API: its limits, its confinement and its configuration,
// which holds no secret. Cancelling the run then removes it.
func TestLimitsAreSetOnTheContainer(t *testing.T) {
	cli := engine(t)
	r := newRunner(t, cli, runner.Options{})
	const secret = "limits-secret-value-91ab"
	limits := runner.Limits{Memory: 96 << 20, NanoCPUs: 5e8, Pids: 64, Tmp: 8 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		out, err := r.Run(ctx, runner.Job{
			ID:      "limited",
			Kind:    runner.Mechanical,
			Script:  "exec sleep 600",
			Secrets: map[string]string{"SOME_TOKEN": secret},
			Limits:  limits,
			Timeout: 5 * time.Minute,
		})
		done <- runResult{out, err}
	}()
	c := waitRunning(t, cli, "limited", done)
	hc := c.HostConfig
	if hc.Memory != limits.Memory || hc.MemorySwap != limits.Memory {
		t.Errorf("memory %d, swap %d; want %d for both", hc.Memory, hc.MemorySwap, limits.Memory)
	}
	if hc.NanoCPUs != limits.NanoCPUs {
		t.Errorf("nano cpus %d, want %d", hc.NanoCPUs, limits.NanoCPUs)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != limits.Pids {
		t.Errorf("pids limit %v, want %d", hc.PidsLimit, limits.Pids)
	}
	if !hc.ReadonlyRootfs || hc.Privileged {
		t.Errorf("read-only root %v, privileged %v", hc.ReadonlyRootfs, hc.Privileged)
	}
	if len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || len(hc.CapAdd) != 0 {
		t.Errorf("cap drop %v, cap add %v; want [ALL], none", hc.CapDrop, hc.CapAdd)
	}
	if len(hc.SecurityOpt) != 1 || hc.SecurityOpt[0] != "no-new-privileges:true" {
		t.Errorf("security options %v", hc.SecurityOpt)
	}
	if hc.NetworkMode != "none" {
		t.Errorf("network %q, want none", hc.NetworkMode)
	}
	if len(hc.Binds) != 0 || len(hc.Mounts) != 0 || len(c.Mounts) != 0 {
		t.Errorf("host mounts: binds %v, mounts %v, %v", hc.Binds, hc.Mounts, c.Mounts)
	}
	if c.Config.User != "1000:1000" {
		t.Errorf("user %q, want 1000:1000", c.Config.User)
	}
	raw, err := cli.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw.Raw), secret) {
		t.Errorf("docker inspect shows the secret:\n%s", raw.Raw)
	}
	cancel()
	res := <-done
	if !errors.Is(res.err, context.Canceled) || res.out.TimedOut {
		t.Errorf("cancelled run: %v, timed out %v", res.err, res.out.TimedOut)
	}
	requireRemoved(t, cli, c.ID)
}

// runResult is what a Run in a goroutine returned.
type runResult struct {
	out runner.Outcome
	err error
}

// waitRunning polls the engine until the job's container runs, and
// inspects it. A Run that returns first fails the test.
func waitRunning(t *testing.T, cli *client.Client, job string, done <-chan runResult) container.InspectResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{
			Filters: client.Filters{}.Add("label", runner.LabelJob+"="+job).Add("status", "running"),
		})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Items) == 1 {
			c, err := cli.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatalf("inspect: %v", err)
			}
			return c.Container
		}
		select {
		case res := <-done:
			t.Fatalf("run ended before its container was seen: %v\n%s", res.err, res.out.Log)
		case <-ctx.Done():
			t.Fatal("the job's container never ran")
		case <-tick.C:
		}
	}
}

// TestLongLogIsBoundedAndMasked: a job that writes far more than the log
// limit, its secret all through it, comes back with the tail alone, every
// copy of the secret masked.
func TestLongLogIsBoundedAndMasked(t *testing.T) {
	cli := engine(t)
	r := newRunner(t, cli, runner.Options{LogLimit: 4096})
	const secret = "long-log-secret-3e8d1f"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:      "chatty",
		Kind:    runner.Mechanical,
		Secrets: map[string]string{"CHATTY_TOKEN": secret},
		Script:  `yes "token $(cat /run/secrets/CHATTY_TOKEN) again" | head -n 30000; echo done`,
	})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d\n%s", err, out.ExitCode, out.Log)
	}
	if len(out.Log) > 4096 || out.LogBytes < 1000000 {
		t.Errorf("kept %d bytes of %d; want at most 4096 of at least 1000000", len(out.Log), out.LogBytes)
	}
	if !strings.HasSuffix(out.Log, "done\n") || !strings.Contains(out.Log, "token "+redact.Mask+" again") {
		t.Errorf("tail:\n%s", out.Log)
	}
	for i := 6; i <= len(secret); i++ {
		if strings.Contains(out.Log, secret[:i]) || strings.Contains(out.Log, secret[len(secret)-i:]) {
			t.Fatalf("part %q of the secret shows", secret[:i])
		}
	}
}

// TestReapRemovesOnlyItsOwn: Reap removes the containers with this
// runner's labels that a crashed caller left, running or not, and leaves
// any other container alone.
func TestReapRemovesOnlyItsOwn(t *testing.T) {
	cli := engine(t)
	image := runnerImage(t, cli)
	r, run := newLabelledRunner(t, cli, runner.Options{})
	other, otherRun := newLabelledRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Leftovers: a labelled container as a crashed Run leaves it, one of
	// them running, and one of another runner.
	leftover := func(run string, start bool) string {
		t.Helper()
		labels := map[string]string{runner.LabelRunner: "true", runner.LabelJob: "crashed", testLabel: run}
		c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: image, Cmd: []string{"sleep", "600"}, Labels: labels},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if start {
			if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return c.ID
	}
	mine := []string{leftover(run, false), leftover(run, true)}
	theirs := leftover(otherRun, false)
	n, err := r.Reap(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reaped %d: %v; want 2", n, err)
	}
	for _, id := range mine {
		requireRemoved(t, cli, id)
	}
	if _, err := cli.ContainerInspect(ctx, theirs, client.ContainerInspectOptions{}); err != nil {
		t.Fatalf("another runner's container went: %v", err)
	}
	if n, err := other.Reap(ctx); err != nil || n != 1 {
		t.Fatalf("the other runner reaped %d: %v; want 1", n, err)
	}
}
