package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// sysEnv runs the disinto binary as an operator does: one projects dir,
// one env file and one data dir, each command a separate process.
type sysEnv struct {
	t        testing.TB
	bin      string
	dir      string
	projects string
	envFile  string
	data     string
	// base is the process environment of every command: PATH and a
	// private HOME, nothing inherited from the test process.
	base []string
}

func newSysEnv(t testing.TB) *sysEnv {
	t.Helper()
	// As root the daemon gives each model session a uid of its own, which
	// must be able to pass through to its workspace in the data dir.
	dir := sandboxtest.Dir(t, "system")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return &sysEnv{
		t: t, bin: buildDisinto(t, dir), dir: dir,
		projects: filepath.Join(dir, "projects"), envFile: filepath.Join(dir, ".env"), data: filepath.Join(dir, "data"),
		base: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TZ=UTC"},
	}
}

// buildDisinto builds ./cmd/disinto into dir (with -race when the tests
// run with it) and returns the binary's path.
func buildDisinto(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "disinto")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/disinto")...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/disinto: %v\n%s", err, out)
	}
	return bin
}

// globals are the global flags pointing every command at the env's files.
func (s *sysEnv) globals() []string {
	return []string{"--projects-dir", s.projects, "--env-file", s.envFile, "--data-dir", s.data}
}

// run runs one disinto command to completion with extra environment.
func (s *sysEnv) run(env []string, args ...string) (stdout, stderr string, err error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append(args, s.globals()...)...)
	cmd.Env = append(append([]string{}, s.base...), env...)
	cmd.Dir = s.dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// mustRun runs one disinto command and fails the test when it fails.
func (s *sysEnv) mustRun(env []string, args ...string) string {
	s.t.Helper()
	out, errOut, err := s.run(env, args...)
	if err != nil {
		s.t.Fatalf("disinto %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// daemonProc is a running `disinto daemon`.
type daemonProc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stdout string
	stderr string
}

// startDaemon starts the daemon with its webhook receiver on listen and
// /status and /metrics on statusListen, giving running sessions grace at
// shutdown; the test's cleanup kills it if it is still running.
func (s *sysEnv) startDaemon(env []string, listen, statusListen string, grace time.Duration) *daemonProc {
	s.t.Helper()
	d := &daemonProc{done: make(chan struct{}), stdout: filepath.Join(s.dir, "daemon.stdout"), stderr: filepath.Join(s.dir, "daemon.stderr")}
	outf, err := os.Create(d.stdout)
	if err != nil {
		s.t.Fatal(err)
	}
	errf, err := os.Create(d.stderr)
	if err != nil {
		s.t.Fatal(err)
	}
	d.cmd = exec.Command(s.bin, append([]string{"daemon", "--listen", listen, "--status-listen", statusListen, "--grace", grace.String()}, s.globals()...)...)
	d.cmd.Env = append(append([]string{}, s.base...), env...)
	d.cmd.Dir = s.dir
	d.cmd.Stdout, d.cmd.Stderr = outf, errf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		s.t.Fatalf("start daemon: %v", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		_ = outf.Close()
		_ = errf.Close()
		close(d.done)
	}()
	s.t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	})
	return d
}

// exited reports whether the daemon process has ended.
func (d *daemonProc) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// output returns what the daemon wrote so far.
func (d *daemonProc) output(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{d.stdout, d.stderr} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// stop sends SIGTERM and waits for the exit.
func (d *daemonProc) stop(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-d.done:
		return d.err
	case <-time.After(timeout):
		t.Fatalf("daemon did not exit within %s of SIGTERM", timeout)
		return nil
	}
}

// pollUntil checks cond every interval until it holds; it fails the test
// when timeout passes first, or at once when abort reports a reason.
func pollUntil(t testing.TB, what string, timeout time.Duration, abort func() string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		if abort != nil {
			if why := abort(); why != "" {
				t.Fatalf("waiting for %s: %s", what, why)
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// httpGet returns the body of a GET on url.
func httpGet(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// sourceRepo is a local repository with one commit on main, the code
// `disinto init --source` pushes into the empty project repository.
func sourceRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "source")
	runGit(t, "", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# widgets\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README.md")
	runGit(t, dir, "-c", "user.name=someone", "-c", "user.email=someone@example.invalid", "commit", "-q", "-m", "initial")
	return dir
}

// filesContaining lists the files under root whose content contains any
// of secrets, naming the secret's variable.
func filesContaining(t testing.TB, root string, secrets map[string]string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for name, v := range secrets {
			if bytes.Contains(data, []byte(v)) {
				hits = append(hits, fmt.Sprintf("%s holds %s", path, name))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// countRuns counts the runs of role with reason ("" for any).
func countRuns(recs []ledger.Record, role string, reason ledger.Reason) int {
	n := 0
	for _, r := range recs {
		if r.Role == role && (reason == "" || r.Reason == reason) {
			n++
		}
	}
	return n
}

// metricSum adds the samples of metric whose labels match the regular
// expression labels ("" matches all).
func metricSum(text, metric, labels string) float64 {
	re := regexp.MustCompile(labels)
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if labels != "" && !re.MatchString(line) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
