package faults

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// world is one project on the shared Gitea, reached by its daemon only
// through a fault-injecting proxy, with its own bots, data dir and model
// server. The test plays the humans (as the owner, straight to Gitea).
type world struct {
	t        *testing.T
	srv      *forgetest.Server
	proxy    *forgetest.Proxy
	owner    forgetest.User
	dev      forgetest.User
	reviewer forgetest.User
	// repo acts as the owner, past the proxy.
	repo     *forge.RepoClient
	model    *claudetest.Server
	dir      string
	projects string
	envFile  string
	data     string
	// env is the daemon's process environment.
	env []string
	bin string

	mu sync.Mutex
	d  *daemon
}

// uidPools numbers the worlds' session uid pools.
var uidPools atomic.Int64

// uidPoolSize is the number of session uids of one world.
const uidPoolSize = 100

// setup tunes a world before its daemon starts.
type setup struct {
	// env adds to or overrides the daemon's environment.
	env []string
	// wrap, when set, is a shell script that stands in for the CLI: it
	// runs the real one as "$REAL" and misbehaves around it.
	wrap string
	// data, when set, is the data dir (a mount the test made).
	data string
}

// newWorld provisions a project as `disinto init` would, by hand so that
// worlds sharing one Gitea do not share bots, and writes the project and
// env files whose forge is the proxy.
func newWorld(t *testing.T, su setup, scenarios ...claudetest.Scenario) *world {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the suite runs sessions under uids of their own: it needs root (CI runs as root)")
	}
	bin := disinto(t)
	w := &world{t: t, srv: gitea.Get(t)}
	w.proxy = forgetest.NewProxy(t, w.srv.URL)
	var modelURL string
	w.model, modelURL = claudetest.Start(t, scenarios...)
	p := w.srv.NewProject(t, "widgets")
	w.owner, w.dev, w.reviewer, w.repo = p.Owner, p.Dev, p.Reviewer, p.Repo

	w.dir = sandboxtest.Dir(t, "world")
	addRoot(w.dir)
	w.projects, w.envFile, w.data = filepath.Join(w.dir, "projects"), filepath.Join(w.dir, ".env"), filepath.Join(w.dir, "data")
	if su.data != "" {
		w.data = su.data
		addRoot(w.data)
	}
	if err := os.MkdirAll(w.projects, 0o750); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("name = \"widgets\"\nrepo = %q\nforge_url = %q\nprimary_branch = \"main\"\n\n[ci]\nsystem = \"none\"\n",
		w.repo.Slug(), w.proxy.URL)
	write(t, filepath.Join(w.projects, "widgets.toml"), project)
	write(t, w.envFile, strings.Join([]string{
		"FORGE_TOKEN=" + w.dev.Token, "FORGE_PASS=" + w.dev.Password, "FORGE_BOT_USER_DEV=" + w.dev.Login,
		"FORGE_REVIEW_TOKEN=" + w.reviewer.Token, "FORGE_REVIEW_PASS=" + w.reviewer.Password,
		"FORGE_BOT_USER_REVIEW=" + w.reviewer.Login, "FORGE_BOT_USERNAMES=" + w.dev.Login + "," + w.reviewer.Login,
		"FORGE_ADMIN_USER=" + w.owner.Login, "DISINTO_WEBHOOK_SECRET=" + hookSecret,
	}, "\n")+"\n")

	cli := claudetest.RequireCLI(t)
	if su.wrap != "" {
		// Sessions run as their own uids: the script must be readable.
		wrapper := filepath.Join(w.dir, "claude")
		if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nREAL="+cli+"\n"+su.wrap), 0o755); err != nil {
			t.Fatal(err)
		}
		cli = wrapper
	}
	home := filepath.Join(w.dir, "home")
	w.env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TZ=UTC",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=test", "CLAUDE_BIN=" + cli,
		// The CLI retries 429 and 529 itself unless told not to.
		"CLAUDE_CODE_MAX_RETRIES=0",
		"AGENT_ROLES=dev,review", "POLL_INTERVAL=2", "CLAUDE_MAX_SESSIONS=2", "CLAUDE_TIMEOUT=120",
		"CLAUDE_IDLE_GRACE=5", "DISINTO_FORGE_TIMEOUT=3", "DISINTO_TICK_TIMEOUT=60",
		// Daemons sharing a host need pools of their own (freeing a uid
		// ends its processes), apart from other suites' (from 200000).
		fmt.Sprintf("DISINTO_SESSION_UID_BASE=%d", sessionUIDBase+uidPools.Add(1)*uidPoolSize),
		fmt.Sprintf("DISINTO_SESSION_UID_COUNT=%d", uidPoolSize),
	}, su.env...)
	w.bin = bin
	return w
}

// daemon is one run of `disinto daemon` of a world.
type daemon struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	out    string // file of its console output
	status string // its status listener's address
	listen string
}

// start starts the world's daemon; the test's cleanup kills it. Each start
// appends to the same console log, so assertions about log lines see every
// run of the daemon.
func (w *world) start() *daemon {
	w.t.Helper()
	d := &daemon{done: make(chan struct{}), out: filepath.Join(w.dir, "daemon.log"), listen: freeAddr(w.t), status: freeAddr(w.t)}
	f, err := os.OpenFile(d.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	d.cmd = exec.Command(w.bin, "daemon", "--listen", d.listen, "--status-listen", d.status, "--grace", "2s",
		"--projects-dir", w.projects, "--env-file", w.envFile, "--data-dir", w.data)
	d.cmd.Env, d.cmd.Dir = w.env, w.dir
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		w.t.Fatalf("start daemon: %v", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		_ = f.Close()
		close(d.done)
	}()
	w.t.Cleanup(func() { d.kill() })
	w.mu.Lock()
	w.d = d
	w.mu.Unlock()
	return d
}

// kill sends SIGKILL to the daemon (not to the sessions it started, which
// live in process groups of their own) and waits for it to die.
func (d *daemon) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

// stop sends SIGTERM and waits for the exit.
func (d *daemon) stop(t *testing.T) error {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.err
	case <-time.After(time.Minute):
		t.Fatal("the daemon did not exit within a minute of SIGTERM")
		return nil
	}
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// died reports why the world's current daemon is gone, or "".
func (w *world) died() string {
	w.mu.Lock()
	d := w.d
	w.mu.Unlock()
	if d != nil && d.exited() {
		return fmt.Sprintf("the daemon exited (%v):\n%s", d.err, w.output())
	}
	return ""
}

// output is everything every run of the world's daemon wrote.
func (w *world) output() string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "daemon.log"))
	return string(b)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor checks cond every 200 ms until it holds, failing the test after
// timeout or as soon as the daemon dies (when w is set).
func waitFor(t *testing.T, w *world, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if w != nil {
			if why := w.died(); why != "" {
				t.Fatalf("waiting for %s: %s", what, why)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hookSecret is the worlds' DISINTO_WEBHOOK_SECRET.
const hookSecret = "faults-hook-secret"

// poke sends the daemon d a signed pull request event, as the forge does
// when something changes, so that its agents run now rather than after
// the start's stagger; it waits for the daemon to accept it.
func (w *world) poke(d *daemon) {
	w.t.Helper()
	body := []byte(`{"action":"synchronized","repository":{"full_name":"` + w.repo.Slug() + `"}}`)
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	waitFor(w.t, nil, "the daemon taking a webhook", time.Minute, func() bool {
		if d.exited() {
			return true // killed again meanwhile: the next start pokes
		}
		req, err := http.NewRequest(http.MethodPost, "http://"+d.listen+"/hooks/forgejo", bytes.NewReader(body))
		if err != nil {
			w.t.Fatal(err)
		}
		req.Header.Set("X-Gitea-Event", "pull_request")
		req.Header.Set("X-Gitea-Signature", sig)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
}
