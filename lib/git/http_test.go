package git_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// httpRemote serves a fixture's bare repository over smart HTTP with the
// real git http-backend, behind basic authentication.
type httpRemote struct {
	url string // repository URL, without credentials

	mu       sync.Mutex
	sawCreds []string // user:password pairs received, for leak checks
}

func (h *httpRemote) creds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sawCreds...)
}

func newHTTPRemote(t *testing.T, f *fixture, user, pass string) *httpRemote {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v (apt-get install git)", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git-http-backend missing: %v (apt-get install git)", err)
	}
	// Pushes over HTTP need receive-pack enabled explicitly.
	sh(t, f.bare, nil, "config", "http.receivepack", "true")
	cgiHandler := &cgi.Handler{
		Path:       backend,
		Env:        []string{"GIT_PROJECT_ROOT=" + filepath.Dir(f.bare), "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
		InheritEnv: []string{"PATH"},
	}
	h := &httpRemote{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if ok {
			h.mu.Lock()
			h.sawCreds = append(h.sawCreds, u+":"+p)
			h.mu.Unlock()
		}
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/" + filepath.Base(f.bare)
	return h
}

const (
	botUser = "dev-bot"
	botPass = "s3cret-Pa$$word\\n" // a backslash and dollars survive the helper
)

func TestHTTPPushWithCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	remote := newHTTPRemote(t, f, botUser, botPass)
	g := newGit(&git.Credentials{URL: remote.url, Username: botUser, Password: botPass})
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "clone")
	repo, err := g.EnsureClone(ctx, remote.url, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.ConfigureIdentity(ctx, "dev-bot", "dev-bot@disinto.local"); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-9", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "fix.txt", "fixed\n")
	if err := repo.Push(ctx, wt, "fix/issue-9", git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	head, _ := repo.HeadSHA(ctx, wt)
	if got := sh(t, f.bare, nil, "rev-parse", "refs/heads/fix/issue-9"); got != head {
		t.Errorf("remote branch = %s, want %s", got, head)
	}
	assertNoSecretOnDisk(t, dir)
}

func TestHTTPWithoutCredentialsFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	remote := newHTTPRemote(t, f, botUser, botPass)
	tests := []struct {
		name  string
		creds *git.Credentials
	}{
		{"no credentials", nil},
		{"wrong password", &git.Credentials{URL: remote.url, Username: botUser, Password: "wrong-password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newGit(tt.creds).EnsureClone(t.Context(), remote.url, filepath.Join(t.TempDir(), "c"), "main")
			var gerr *git.Error
			if !errors.As(err, &gerr) {
				t.Fatalf("EnsureClone = %v, want a *git.Error", err)
			}
			if strings.Contains(err.Error(), "wrong-password") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

func TestCredentialsStayOnTheirHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	forge := newHTTPRemote(t, f, botUser, botPass)
	other := newHTTPRemote(t, newFixture(t), "someone", "else-entirely")
	g := newGit(&git.Credentials{URL: forge.url, Username: botUser, Password: botPass})
	if _, err := g.EnsureClone(t.Context(), other.url, filepath.Join(t.TempDir(), "c"), "main"); err == nil {
		t.Fatal("clone from a host without matching credentials succeeded")
	}
	for _, c := range other.creds() {
		if strings.Contains(c, botPass) {
			t.Fatalf("forge password sent to another host: %q", c)
		}
	}
}

func TestPushMirrorWithEmbeddedCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	mirrorFixture := newFixture(t)
	mirror := newHTTPRemote(t, mirrorFixture, "mirror-bot", "mirror-pass-123")
	ctx := t.Context()
	sha, _ := repo.HeadSHA(ctx, repo.Dir())
	withCreds := strings.Replace(mirror.url, "http://", "http://mirror-bot:mirror-pass-123@", 1)
	if err := repo.PushMirror(ctx, withCreds, sha+":refs/heads/mirrored"); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, mirrorFixture.bare, nil, "rev-parse", "refs/heads/mirrored"); got != sha {
		t.Errorf("mirror ref = %s, want %s", got, sha)
	}
	bad := strings.Replace(mirror.url, "http://", "http://mirror-bot:not-the-pass-999@", 1)
	err := repo.PushMirror(ctx, bad, sha+":refs/heads/other")
	if err == nil {
		t.Fatal("push with wrong mirror credentials succeeded")
	}
	if strings.Contains(err.Error(), "not-the-pass-999") {
		t.Errorf("error leaks the mirror password: %v", err)
	}
}

// TestSessionCheckoutRoundTrip is the dev agent's flow: the clone seeds a
// standalone checkout for a session, the session commits there (and
// plants configuration that would run commands), the clone reads the
// commit back over the pack protocol and pushes it; nothing the session
// planted runs, and the checkout holds no credential.
func TestSessionCheckoutRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	remote := newHTTPRemote(t, f, botUser, botPass)
	g := newGit(&git.Credentials{URL: remote.url, Username: botUser, Password: botPass})
	ctx := t.Context()
	repo, err := g.EnsureClone(ctx, remote.url, filepath.Join(t.TempDir(), "clone"), "main")
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(sandboxtest.Dir(t, "planted"), "planted")
	if err := os.Chmod(filepath.Dir(planted), 0o777); err != nil {
		t.Fatal(err)
	}
	var head string
	ws, as, out := sessionCheckout(t, repo, "fix/issue-11", func(ws string) {
		if err := repo.Seed(ctx, ws, git.SeedOptions{Branch: "x"}); err == nil {
			t.Error("Seed over an existing checkout succeeded")
		}
		assertNoSecretOnDisk(t, ws)
		commitIn(t, ws, "m.txt", "model\n")
		head = sh(t, ws, nil, "rev-parse", "HEAD")
		for _, kv := range [][2]string{{"core.fsmonitor", "touch " + planted}, {"uploadpack.packObjectsHook", "touch " + planted}} {
			sh(t, ws, nil, "config", kv[0], kv[1])
		}
		for _, hook := range []string{"pre-upload-pack", "post-checkout", "reference-transaction"} {
			if err := os.WriteFile(filepath.Join(ws, ".git", "hooks", hook), []byte("#!/bin/sh\ntouch "+planted+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	})

	const ref = "refs/disinto/session/fix/issue-11"
	imp := git.Import{As: as, Checkout: ws, Branch: "fix/issue-11", Into: ref, Bundle: filepath.Join(out, "b.bundle"),
		Have: []string{"refs/remotes/origin/main"}}
	if _, err := repo.ImportUntrusted(ctx, imp); err != nil {
		t.Fatal(err)
	}
	missing := imp
	missing.Branch, missing.Into = "missing", "refs/disinto/x"
	if _, err := repo.ImportUntrusted(ctx, missing); !errors.Is(err, git.ErrNotFound) {
		t.Errorf("import of a branch the checkout lacks: %v", err)
	}
	if got, err := repo.RefSHA(ctx, ref); err != nil || got != head {
		t.Fatalf("read back %s, %v; want %s", got, err, head)
	}
	if n, err := repo.CountBetween(ctx, "origin/main", ref); err != nil || n != 1 {
		t.Errorf("commits ahead = %d, %v; want 1", n, err)
	}
	if err := repo.Push(ctx, repo.Dir(), "fix/issue-11", git.PushOptions{ForceWithLease: true, Source: head}); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, f.bare, nil, "rev-parse", "refs/heads/fix/issue-11"); got != head {
		t.Errorf("remote branch = %s, want %s", got, head)
	}
	if _, err := os.Stat(planted); !os.IsNotExist(err) {
		t.Errorf("configuration the session planted ran for the daemon: %v", err)
	}
	// A .git that points elsewhere is refused, not followed.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, ".git"), []byte("gitdir: "+filepath.Join(repo.Dir(), ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other2 := imp
	other2.Checkout, other2.Into = other, "refs/disinto/y"
	if _, err := repo.ImportUntrusted(ctx, other2); err == nil {
		t.Error("import through a .git file succeeded")
	}
	// An empty commit on the forge's head, without any worktree.
	if err := repo.ConfigureIdentity(ctx, "dev-bot", "dev-bot@disinto.local"); err != nil {
		t.Fatal(err)
	}
	sha, err := repo.CommitOnto(ctx, ref, "ci: retrigger")
	if err != nil {
		t.Fatal(err)
	}
	if parent := sh(t, repo.Dir(), nil, "rev-parse", sha+"^"); parent != head {
		t.Errorf("empty commit's parent = %s, want %s", parent, head)
	}
	if data, err := repo.ShowFile(ctx, ref, "m.txt"); err != nil || string(data) != "model\n" {
		t.Errorf("ShowFile = %q, %v", data, err)
	}
	if _, err := repo.ShowFile(ctx, ref, "nope.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ShowFile of a missing file: %v", err)
	}
}

// assertNoSecretOnDisk fails if the bot password appears in the clone's
// configuration.
func assertNoSecretOnDisk(t *testing.T, clone string) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(clone, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), botPass) || strings.Contains(string(cfg), "s3cret") {
		t.Errorf("password written to %s/.git/config:\n%s", clone, cfg)
	}
}

// TestNetworkTimeout: a remote that stops answering fails a network
// command at the network timeout, not never.
func TestNetworkTimeout(t *testing.T) {
	t.Parallel()
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stall); srv.Close() })
	g := git.New(git.Options{Env: isolatedEnv, NetworkTimeout: time.Second})
	_, err := g.EnsureClone(t.Context(), srv.URL+"/repo.git", filepath.Join(t.TempDir(), "clone"), "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("clone from a stalled remote: %v", err)
	}
}
