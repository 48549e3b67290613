package faults

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// world is one project on the shared Gitea, reached by its daemon only
// through a fault-injecting proxy, with its own bots, data dir and model
// server. The test plays the humans (as the owner, straight to Gitea).
// The scene's Repo acts as the owner, past the proxy; the installation's
// Env is the daemon's process environment.
type world struct {
	*rig.Scene
	*rig.Install
	t     *testing.T
	proxy *forgetest.Proxy
	// out is what every run of the daemon wrote.
	out *rig.Output

	mu sync.Mutex
	d  *rig.Daemon
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
	srv := gitea.Get(t)
	w := &world{t: t, proxy: forgetest.NewProxy(t, srv.URL), out: &rig.Output{}}
	w.Scene = rig.NewScene(t, srv, "widgets", scenarios...)
	w.Install = rig.New(t, sandboxtest.Dir(t, "world"))
	addRoot(w.Dir)
	if su.data != "" {
		w.Data = su.data
		addRoot(w.Data)
	}
	rig.WriteProject(t, w.Projects, "widgets", w.Repo.Slug(), w.proxy.URL)
	rig.WriteEnvFile(t, w.EnvFile, append(w.Credentials(),
		"FORGE_BOT_USER_DEV="+w.Dev.Login, "FORGE_BOT_USER_REVIEW="+w.Reviewer.Login,
		"FORGE_BOT_USERNAMES="+w.Dev.Login+","+w.Reviewer.Login,
		"FORGE_ADMIN_USER="+w.Owner.Login, "DISINTO_WEBHOOK_SECRET="+hookSecret)...)

	cli := claudetest.RequireCLI(t)
	if su.wrap != "" {
		// Sessions run as their own uids: the script must be readable.
		wrapper := filepath.Join(w.Dir, "claude")
		if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nREAL="+cli+"\n"+su.wrap), 0o755); err != nil {
			t.Fatal(err)
		}
		cli = wrapper
	}
	w.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TZ=UTC"}, rig.ModelEnv(w.ModelURL, cli, filepath.Join(w.Dir, "home"))...)
	w.Env = append(w.Env,
		// The CLI retries 429 and 529 itself unless told not to.
		"CLAUDE_CODE_MAX_RETRIES=0",
		"AGENT_ROLES=dev,review", "POLL_INTERVAL=2", "CLAUDE_MAX_SESSIONS=2", "CLAUDE_TIMEOUT=120",
		"CLAUDE_IDLE_GRACE=5", "DISINTO_FORGE_TIMEOUT=3", "DISINTO_TICK_TIMEOUT=60",
		// Daemons sharing a host need pools of their own (freeing a uid
		// ends its processes), apart from other suites' (from 200000).
		fmt.Sprintf("DISINTO_SESSION_UID_BASE=%d", sessionUIDBase+uidPools.Add(1)*uidPoolSize),
		fmt.Sprintf("DISINTO_SESSION_UID_COUNT=%d", uidPoolSize),
	)
	w.Env = append(w.Env, su.env...)
	return w
}

// start starts the world's daemon; the test's cleanup kills it. Every
// start writes to the same output, so assertions about log lines see
// every run of the daemon.
func (w *world) start() *rig.Daemon {
	w.t.Helper()
	d := w.Start(w.t, rig.DaemonOptions{Listen: rig.FreeAddr(w.t), StatusListen: rig.FreeAddr(w.t), Grace: 2 * time.Second, Output: w.out})
	w.mu.Lock()
	w.d = d
	w.mu.Unlock()
	return d
}

// daemon is the world's current daemon.
func (w *world) daemon() *rig.Daemon {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.d
}

// died reports why the world's current daemon is gone, or "".
func (w *world) died() string {
	if d := w.daemon(); d != nil {
		return d.Died()
	}
	return ""
}

// output is everything every run of the world's daemon wrote.
func (w *world) output() string { return w.out.String() }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hookSecret is the worlds' DISINTO_WEBHOOK_SECRET.
const hookSecret = "faults-hook-secret"

// poke sends the daemon d a signed pull request event, as the forge does
// when something changes, so that its agents run now rather than after
// the start's stagger; it waits for the daemon to accept it.
func (w *world) poke(d *rig.Daemon) {
	w.t.Helper()
	body := []byte(`{"action":"synchronized","repository":{"full_name":"` + w.Repo.Slug() + `"}}`)
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	rig.Await(w.t, "the daemon taking a webhook", time.Minute, nil, func() bool {
		if d.Exited() {
			return true // killed again meanwhile: the next start pokes
		}
		req, err := http.NewRequest(http.MethodPost, "http://"+d.Listen+"/hooks/forgejo", bytes.NewReader(body))
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
