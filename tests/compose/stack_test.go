package compose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

// Names the stack test relies on; tests/setup/docker.sh provides the images.
const (
	overrideFile   = "docker/test/compose.override.yml"
	testForgeImage = "disinto-test/forge:gitea-v1.26.0"
	testAgentImage = "disinto-test/agents:stack"
	setupHint      = "run tests/setup/docker.sh (installs Debian's docker.io and mmdebstrap, builds Docker Compose v2, starts dockerd, builds the local base and forge images)"
)

// repoRoot is the repository root, found from this file's location.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// baseEnv is the environment docker and compose run with: only what they
// need, so that the caller's shell (say an ANTHROPIC_API_KEY) cannot leak
// into interpolation.
func baseEnv() []string {
	env := []string{
		// The legacy builder needs no buildx plugin and reaches only the
		// local images; Debian's engine has no newer builder to offer.
		"DOCKER_BUILDKIT=0",
		"COMPOSE_BAKE=false",
	}
	for _, k := range []string{"PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "XDG_RUNTIME_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// run runs a command and returns its combined output; the error carries the
// command line and the tail of the output.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out.String(), 40))
	}
	return out.String(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// requireCompose fails the test unless `docker compose` (v2) runs.
func requireCompose(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("no docker client on PATH: %s", setupHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := run(ctx, "", baseEnv(), "docker", "compose", "version"); err != nil {
		t.Fatalf("docker compose v2 is not available: %s\n%v", setupHint, err)
	}
}

// requireEngine fails the test unless a Docker engine answers at DOCKER_HOST
// or the default socket and the local images exist.
func requireEngine(t testing.TB, images ...string) {
	t.Helper()
	requireCompose(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := run(ctx, "", baseEnv(), "docker", "info"); err != nil {
		where := os.Getenv("DOCKER_HOST")
		if where == "" {
			where = "unix:///var/run/docker.sock"
		}
		t.Fatalf("no Docker engine answers at %s: %s\n%v", where, setupHint, err)
	}
	for _, img := range images {
		if _, err := run(ctx, "", baseEnv(), "docker", "image", "inspect", img); err != nil {
			t.Fatalf("image %s is missing: %s", img, setupHint)
		}
	}
}

// stack is one compose project built from the product docker-compose.yml
// plus the test override, with its own name, env file and volumes.
type stack struct {
	t       testing.TB
	root    string
	project string
	envFile string
}

// sweep takes the stale stacks down once per test process.
var sweep sync.Once

func newStack(t *testing.T, vars map[string]string) *stack {
	t.Helper()
	sweep.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := sweepStaleStacks(ctx); err != nil {
			t.Fatalf("take down the stacks of earlier test runs: %v", err)
		}
	})
	s := &stack{
		t:       t,
		root:    repoRoot(t),
		project: fmt.Sprintf("disinto-test-%d", os.Getpid()),
		envFile: filepath.Join(t.TempDir(), "stack.env"),
	}
	var b strings.Builder
	for k, v := range vars {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(s.envFile, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := s.compose(ctx, "logs", "--no-color", "--tail", "60")
			t.Logf("compose logs:\n%s", out)
		}
		if err := downProject(ctx, s.project); err != nil {
			t.Errorf("down -v: %v", err)
		}
	})
	return s
}

// downProject removes every container, network and volume of a compose
// project, whatever profiles its services were started with: compose
// run on the project's name alone, outside any directory holding a
// compose file, acts on all that carry the project's label (with the
// product file, it would leave the services of profiles it was not
// given, such as the edge's, running).
func downProject(ctx context.Context, project string) error {
	_, err := run(ctx, os.TempDir(), baseEnv(), "docker", "compose", "--project-name", project,
		"down", "-v", "--remove-orphans", "--timeout", "10")
	return err
}

// sweepStaleStacks takes down the test stacks (disinto-test-<pid>) of
// test processes that no longer run, which a killed run leaves behind
// holding ports, names and volumes; a live process's stack is left alone.
func sweepStaleStacks(ctx context.Context) error {
	out, err := run(ctx, os.TempDir(), baseEnv(), "docker", "compose", "ls", "--all", "--format", "json")
	if err != nil {
		return err
	}
	var projects []struct{ Name string }
	if err := json.Unmarshal([]byte(out), &projects); err != nil {
		return fmt.Errorf("docker compose ls: %w", err)
	}
	for _, p := range projects {
		pid, ok := strings.CutPrefix(p.Name, "disinto-test-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() || processAlive(n) {
			continue
		}
		if err := downProject(ctx, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// processAlive reports whether a process with the id runs.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// compose runs `docker compose` on the stack.
func (s *stack) compose(ctx context.Context, args ...string) (string, error) {
	full := append([]string{
		"compose",
		"--project-name", s.project,
		"--project-directory", s.root,
		"--env-file", s.envFile,
		"-f", filepath.Join(s.root, "docker-compose.yml"),
		"-f", filepath.Join(s.root, overrideFile),
	}, args...)
	return run(ctx, s.root, baseEnv(), "docker", full...)
}

// must runs compose and fails the test on error; it logs how long it took.
func (s *stack) must(ctx context.Context, args ...string) string {
	s.t.Helper()
	start := time.Now()
	out, err := s.compose(ctx, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("docker compose %s: %s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	return out
}

// container returns the id of the service's container (running or not).
func (s *stack) container(ctx context.Context, service string) string {
	s.t.Helper()
	out := s.must(ctx, "ps", "--all", "--quiet", service)
	id := strings.TrimSpace(out)
	if id == "" || strings.Contains(id, "\n") {
		s.t.Fatalf("want one container for %s, got %q", service, id)
	}
	return id
}

// state is a container's status, health ("" without a healthcheck) and exit
// code.
type state struct {
	Status   string
	Health   string
	ExitCode int
}

func (s *stack) inspect(ctx context.Context, id string) (state, error) {
	out, err := run(ctx, "", baseEnv(), "docker", "inspect", "--format", "{{json .State}}", id)
	if err != nil {
		return state{}, err
	}
	var raw struct {
		Status   string
		ExitCode int
		Health   *struct{ Status string }
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return state{}, fmt.Errorf("decode state of %s: %w", id, err)
	}
	st := state{Status: raw.Status, ExitCode: raw.ExitCode}
	if raw.Health != nil {
		st.Health = raw.Health.Status
	}
	return st, nil
}

// waitFor polls cond every interval until it reports done, returns an
// error, or ctx ends.
func waitFor(ctx context.Context, interval time.Duration, what string, cond func() (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		done, err := cond()
		if done {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// waitHealthy waits until the service's container reports healthy.
func (s *stack) waitHealthy(ctx context.Context, service string) {
	s.t.Helper()
	start := time.Now()
	id := s.container(ctx, service)
	err := waitFor(ctx, time.Second, service+" healthy", func() (bool, error) {
		st, err := s.inspect(ctx, id)
		switch {
		case err != nil:
			return false, err
		case st.Status == "exited" || st.Health == "unhealthy":
			return true, fmt.Errorf("%s is %s/%s (exit %d)", service, st.Status, st.Health, st.ExitCode)
		case st.Health == "healthy":
			return true, nil
		}
		return false, fmt.Errorf("%s is %s/%s", service, st.Status, st.Health)
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("%s healthy after %s", service, time.Since(start).Round(100*time.Millisecond))
}

// waitExited waits until a one-shot service's container exits and fails the
// test unless it exited 0.
func (s *stack) waitExited(ctx context.Context, service string) {
	s.t.Helper()
	id := s.container(ctx, service)
	err := waitFor(ctx, time.Second, service+" to finish", func() (bool, error) {
		st, err := s.inspect(ctx, id)
		switch {
		case err != nil:
			return false, err
		case st.Status == "exited" && st.ExitCode == 0:
			return true, nil
		case st.Status == "exited" || st.Status == "dead":
			return true, fmt.Errorf("%s exited with %d", service, st.ExitCode)
		}
		return false, fmt.Errorf("%s is %s", service, st.Status)
	})
	if err != nil {
		logs, _ := s.compose(ctx, "logs", "--no-color", service)
		s.t.Fatalf("%v\n%s", err, tail(logs, 40))
	}
}

// forgeURL is the host address the forge's port 3000 is published on.
func (s *stack) forgeURL(ctx context.Context) string {
	s.t.Helper()
	out := strings.TrimSpace(s.must(ctx, "port", "forgejo", "3000"))
	if _, _, ok := strings.Cut(out, ":"); !ok {
		s.t.Fatalf("unexpected port mapping %q", out)
	}
	return "http://" + out
}

// apiStatus sends one forge API request with basic auth and returns the
// status code.
func apiStatus(ctx context.Context, method, url, user, pass string, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// sharedClaudeDir makes the CLAUDE_CONFIG_DIR bind-mount source, owned by
// the agents' uid as the quick start tells users to create it.
func sharedClaudeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "claude-config")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 1000, 1000); err != nil {
		// Not root: let the container user in anyway.
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// buildModelServer puts a static tests/modelserver binary and the scenarios
// into dir, which the override mounts into the modelserver service.
func buildModelServer(ctx context.Context, t *testing.T, dir string, scenarios ...claudetest.Scenario) {
	t.Helper()
	root := repoRoot(t)
	env := append(os.Environ(), "CGO_ENABLED=0")
	if _, err := run(ctx, root, env, "go", "build", "-o", filepath.Join(dir, "modelserver"), "./tests/modelserver"); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenarios", "stack.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readDataFile returns a file of the stack's agent-data volume.
func (s *stack) readDataFile(ctx context.Context, name string) string {
	s.t.Helper()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm",
		"-v", s.project+"_agent-data:/data:ro", "debian:bookworm-slim", "cat", "/data/"+name)
	cmd.Env = baseEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("read %s from the agent-data volume: %v\n%s", name, err, stderr.String())
	}
	return string(out)
}

// forgeAPI is a minimal JSON client of the forge with basic auth.
type forgeAPI struct {
	base, user, pass string
}

func (f *forgeAPI) do(ctx context.Context, t testing.TB, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(f.user, f.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: status %d: %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
}

// TestStaleStacksAreSwept: a stack a killed test run left behind, with a
// service of a profile running, is taken down whole by the next run.
func TestStaleStacksAreSwept(t *testing.T) {
	requireEngine(t, "debian:bookworm-slim")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The id of a process that has exited: the stack's owner is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("disinto-test-%d", dead.Process.Pid)
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yml")
	if err := os.WriteFile(file, []byte("services:\n  idle:\n    image: debian:bookworm-slim\n    command: [sleep, \"600\"]\n"+
		"    profiles: [extra]\n    volumes: [scratch:/scratch]\nvolumes:\n  scratch: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = downProject(context.Background(), project) })
	if _, err := run(ctx, dir, baseEnv(), "docker", "compose", "--project-name", project, "-f", file,
		"--profile", "extra", "up", "--detach"); err != nil {
		t.Fatal(err)
	}
	if err := sweepStaleStacks(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := run(ctx, dir, baseEnv(), "docker", "compose", "ls", "--all", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, project) {
		t.Errorf("the stale stack %s is still there: %s", project, out)
	}
	if out, _ := run(ctx, dir, baseEnv(), "docker", "volume", "ls", "--quiet"); strings.Contains(out, project) {
		t.Errorf("the stale stack's volume is still there: %s", out)
	}
}
