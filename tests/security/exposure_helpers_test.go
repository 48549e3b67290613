package security

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// rig runs the disinto binary as an operator does: one project file, a data
// dir, and the configuration in the process environment.
type rig struct {
	bin      string
	dir      string
	projects string
	data     string
	env      []string
}

// newRig builds ./cmd/disinto and writes one project whose forge is
// forgeURL. env is the environment of every command it runs.
func newRig(t *testing.T, forgeURL string, env ...string) *rig {
	t.Helper()
	// Session users must be able to pass to the data dir's workspaces.
	dir := sandboxtest.Dir(t, "rig")
	r := &rig{bin: filepath.Join(dir, "disinto"), dir: dir, projects: filepath.Join(dir, "projects"), data: filepath.Join(dir, "data")}
	build := exec.Command("go", "build", "-o", r.bin, "./cmd/disinto")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/disinto: %v\n%s", err, out)
	}
	if err := os.MkdirAll(r.projects, 0o750); err != nil {
		t.Fatal(err)
	}
	toml := "name = \"widgets\"\nrepo = \"acme/widgets\"\nforge_url = \"" + forgeURL + "\"\nprimary_branch = \"main\"\n\n[ci]\nsystem = \"none\"\n"
	if err := os.WriteFile(filepath.Join(r.projects, "widgets.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	r.env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "POLL_INTERVAL=3600"}, env...)
	return r
}

func (r *rig) globals() []string {
	return []string{"--projects-dir", r.projects, "--env-file", filepath.Join(r.dir, "none.env"), "--data-dir", r.data}
}

// run runs one command to completion and returns its combined output.
func (r *rig) run(env []string, args ...string) (string, error) {
	cmd := exec.Command(r.bin, append(args, r.globals()...)...)
	cmd.Env = append(append([]string{}, r.env...), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// proc is a running daemon.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	out  *syncBuffer
}

// start starts `disinto daemon` with args; t's cleanup kills it.
func (r *rig) start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{}), out: &syncBuffer{}}
	p.cmd = exec.Command(r.bin, append(append([]string{"daemon", "--grace", "1s"}, args...), r.globals()...)...)
	p.cmd.Env = append(append([]string{}, r.env...), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("daemon output:\n%s", p.out.String())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for the exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not exit within 30s of SIGTERM")
	}
}

// addrs are the addresses a running daemon recorded in daemon.json: its
// listener and its status listener ("" when it has none of its own).
type addrs struct {
	PID    int    `json:"pid"`
	Listen string `json:"listen"`
	Status string `json:"status"`
}

// awaitAddrs waits until daemon p has written daemon.json.
func (r *rig) awaitAddrs(t *testing.T, p *proc) addrs {
	t.Helper()
	var a addrs
	await(t, "daemon.json", 2*time.Minute, func() string {
		if p.exited() {
			return "the daemon exited:\n" + p.out.String()
		}
		return ""
	}, func() bool {
		b, err := os.ReadFile(filepath.Join(r.data, "daemon.json"))
		return err == nil && json.Unmarshal(b, &a) == nil && a.Listen != "" && a.PID == p.cmd.Process.Pid
	})
	return a
}

// statusAddr is where the daemon serves /status and /metrics.
func (a addrs) statusAddr() string {
	if a.Status != "" {
		return a.Status
	}
	return a.Listen
}

// await checks cond every 50 ms until it holds; it fails the test when
// timeout passes first, or at once when abort reports a reason.
func await(t *testing.T, what string, timeout time.Duration, abort func() string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
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

// get does a GET with an optional bearer token and returns status and body.
func get(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// otherAddress returns an address of this machine that is not loopback,
// or nil when it has none.
func otherAddress(t *testing.T) net.IP {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// port returns the port of a host:port address.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for a writing process and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
