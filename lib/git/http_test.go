package git_test

import (
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/git"
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

func TestModelPushFromWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	remote := newHTTPRemote(t, f, botUser, botPass)
	g := newGit(&git.Credentials{URL: remote.url, Username: botUser, Password: botPass})
	ctx := t.Context()
	repo, err := g.EnsureClone(ctx, remote.url, filepath.Join(t.TempDir(), "clone"), "main")
	if err != nil {
		t.Fatal(err)
	}
	name, email := git.Identity("dev-bot")
	if err := repo.ConfigureIdentity(ctx, name, email); err != nil {
		t.Fatal(err)
	}
	if err := repo.ConfigureWorktreeAuth(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repo.ConfigureWorktreeAuth(ctx); err != nil {
		t.Fatalf("ConfigureWorktreeAuth is not idempotent: %v", err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-11", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "m.txt", "model\n")

	// What the model runs in its session: a plain `git push`.
	push := func(env []string) (string, error) {
		cmd := exec.Command("git", "push")
		cmd.Dir = wt
		cmd.Env = append(append(append(os.Environ(), isolatedEnv...), "GIT_TERMINAL_PROMPT=0"), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := push(nil); err == nil {
		t.Fatalf("push without the session environment succeeded:\n%s", out)
	}
	if out, err := push(g.WorktreeEnv()); err != nil {
		t.Fatalf("push with WorktreeEnv failed: %v\n%s", err, out)
	}
	head, _ := repo.HeadSHA(ctx, wt)
	if got := sh(t, f.bare, nil, "rev-parse", "refs/heads/fix/issue-11"); got != head {
		t.Errorf("remote branch = %s, want %s", got, head)
	}
	assertNoSecretOnDisk(t, repo.Dir())
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
