// Package forgetest starts a real Gitea server for tests: a fresh instance
// per call (free port, temporary directory, site admin with a token), built
// by tests/setup/gitea.sh. Import it only from _test.go files.
package forgetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// Version is the Gitea version the harness is built for.
const Version = "v1.26.0"

// Environment variables overriding where the server binary and its source
// tree (templates, locales) are found.
const (
	EnvBin = "DISINTO_GITEA_BIN"
	EnvSrc = "DISINTO_GITEA_SRC"
)

// howToBuild is appended to every "cannot start" error.
const howToBuild = "build it with tests/setup/gitea.sh (or set " + EnvBin + " and " + EnvSrc + ")"

// Server is a running Gitea instance.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:40123.
	URL string
	// AdminLogin, AdminPassword and AdminToken identify the site admin.
	AdminLogin    string
	AdminPassword string
	AdminToken    string

	dir  string
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	seq  atomic.Int64
}

// Paths returns the server binary and source directory, or an error saying
// how to build them.
func Paths() (bin, src string, err error) {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, herr := os.UserHomeDir()
		if herr != nil {
			return "", "", fmt.Errorf("gitea test server: no home directory: %w; %s", herr, howToBuild)
		}
		cache = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(cache, "disinto", "gitea", Version)
	bin = os.Getenv(EnvBin)
	if bin == "" {
		bin = filepath.Join(dir, "gitea")
	}
	if st, serr := os.Stat(bin); serr != nil || st.IsDir() {
		return "", "", fmt.Errorf("gitea test server binary %s not found; %s", bin, howToBuild)
	}
	src = os.Getenv(EnvSrc)
	if src == "" {
		b, rerr := os.ReadFile(filepath.Join(dir, "source-dir"))
		if rerr != nil {
			return "", "", fmt.Errorf("gitea source dir unknown (%v); %s", rerr, howToBuild)
		}
		src = strings.TrimSpace(string(b))
	}
	if _, serr := os.Stat(filepath.Join(src, "options", "locale")); serr != nil {
		return "", "", fmt.Errorf("gitea source dir %s has no options/locale; %s", src, howToBuild)
	}
	return bin, src, nil
}

// Start launches a fresh server for t and stops it when t ends. It fails
// the test (never skips) when the server cannot be built or started.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch()
	if err != nil {
		t.Fatalf("start gitea: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Shared is a server started on first use and shared by the tests of one
// package; Main stops it when they are done. Tests that need no server
// never start one.
type Shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Get returns the shared server, starting it on first use; it fails t if
// the server cannot be started.
func (sh *Shared) Get(t testing.TB) *Server {
	t.Helper()
	sh.once.Do(func() { sh.s, sh.err = Launch() })
	if sh.err != nil {
		t.Fatalf("start gitea: %v", sh.err)
	}
	return sh.s
}

// Close stops the server if it was started.
func (sh *Shared) Close() error {
	sh.once.Do(func() {}) // no start after Close
	if sh.s == nil {
		return nil
	}
	return sh.s.Close()
}

// Main runs the tests of a package and then stops the shared server:
//
//	var gitea forgetest.Shared
//	func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }
func Main(m *testing.M, sh *Shared) int {
	code := m.Run()
	if err := sh.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "stop gitea: %v\n", err)
	}
	return code
}

// Options are settings of a server that not every test wants.
type Options struct {
	// Actions enables Gitea Actions: workflows in .forgejo/workflows
	// (as Forgejo reads them), else .gitea/workflows or .github/workflows,
	// create jobs, which a runner (see Runner) picks up, and the jobs API
	// serves their logs.
	Actions bool
	// OAuth2 enables the forge's OAuth2 provider, for tests that log in to
	// another service with a forge account.
	OAuth2 bool
}

// StartWith launches a fresh server with o for t and stops it when t
// ends. It fails the test (never skips) when the server cannot start.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := LaunchWith(o)
	if err != nil {
		t.Fatalf("start gitea: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Launch starts a server; the caller must Close it.
func Launch() (*Server, error) { return LaunchWith(Options{}) }

// LaunchWith starts a server with o; the caller must Close it.
func LaunchWith(o Options) (*Server, error) {
	bin, src, err := Paths()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "disinto-gitea-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	s := &Server{dir: dir, bin: bin, AdminLogin: "forge-admin", AdminPassword: "admin-Passw0rd-" + filepath.Base(dir)}
	if err := s.launch(src, o); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) launch(src string, o Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := os.WriteFile(s.ini(), []byte(appINI(s.dir, src, port, o)), 0o600); err != nil {
		return fmt.Errorf("write app.ini: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := s.run(ctx, "migrate"); err != nil {
		return fmt.Errorf("gitea migrate: %w: %s", err, out)
	}
	out, err := s.run(ctx, "admin", "user", "create", "--admin", "--username", s.AdminLogin,
		"--password", s.AdminPassword, "--email", s.AdminLogin+"@example.test",
		"--must-change-password=false", "--access-token", "--access-token-name", "admin",
		"--access-token-scopes", "all")
	if err != nil {
		return fmt.Errorf("gitea admin user create: %w: %s", err, out)
	}
	m := regexp.MustCompile(`Access token was successfully created\.\.\. ([0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("gitea admin user create: no token in output: %s", out)
	}
	s.AdminToken = string(m[1])
	return s.startWeb()
}

func (s *Server) ini() string { return filepath.Join(s.dir, "app.ini") }

func (s *Server) env() []string {
	return append(os.Environ(), "HOME="+s.dir, "GITEA_WORK_DIR="+s.dir)
}

func (s *Server) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.bin, append(args, "--config", s.ini())...)
	cmd.Dir, cmd.Env = s.dir, s.env()
	return cmd.CombinedOutput()
}

func (s *Server) startWeb() error {
	logf, err := os.Create(filepath.Join(s.dir, "web.log"))
	if err != nil {
		return fmt.Errorf("web log: %w", err)
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(s.bin, "web", "--config", s.ini())
	cmd.Dir, cmd.Env = s.dir, s.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("gitea web: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get(s.URL + "/api/v1/version")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("gitea web exited early: %s", s.logTail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gitea web not ready after 60s: %s", s.logTail())
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "web.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Close stops the server and deletes its directory.
func (s *Server) Close() error {
	var errs []error
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Unique returns prefix with a per-server sequence number, for names of
// users and repos that parallel tests must not share.
func (s *Server) Unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, s.seq.Add(1))
}

// Admin returns a client acting as the site admin.
func (s *Server) Admin(t testing.TB) *forge.Client {
	t.Helper()
	return s.Client(t, s.AdminToken, s.AdminLogin)
}

// Client returns a client for token, acting as user, against s.URL.
func (s *Server) Client(t testing.TB, token, user string) *forge.Client {
	t.Helper()
	c, err := forge.New(forge.Options{URL: s.URL, Token: token, User: user})
	if err != nil {
		t.Fatalf("forge client: %v", err)
	}
	return c
}
