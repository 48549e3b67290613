package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

var gitea forgetest.Shared

// envWriter makes the test binary a writer process of TestTwoProcesses.
const envWriter = "DISINTO_OPS_TEST_WRITER"

type writerParams struct {
	URL, User, Password, Dir, Name string
	N                              int
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(envWriter); raw != "" {
		os.Exit(writer(raw))
	}
	os.Exit(forgetest.Main(m, &gitea))
}

// writer appends N lines to journal/shared.md, one commit each.
func writer(raw string) int {
	var p writerParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r := open(p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range p.N {
		line := fmt.Sprintf("%s %d\n", p.Name, i)
		if _, err := r.Commit(ctx, "journal: "+strings.TrimSpace(line), appendLine("journal/shared.md", line)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func open(p writerParams) *ops.Repo {
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: p.URL, Username: p.User, Password: p.Password}})
	name, email := git.Identity(p.User)
	return ops.Open(ops.Options{Git: g, URL: p.URL + "/" + p.User + "/ops.git", Dir: p.Dir, Name: name, Email: email, Attempts: 50})
}

// appendLine is an edit that appends line to the file at path.
func appendLine(path, line string) ops.Edit {
	return func(f ops.Files) ([]git.FileChange, error) {
		old, err := f.Read(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return []git.FileChange{{Path: path, Content: append(old, line...)}}, nil
	}
}

func newOpsRepo(t *testing.T) (*forgetest.Server, forgetest.User, writerParams) {
	t.Helper()
	srv := gitea.Get(t)
	u := srv.NewUser(t, "ops-bot")
	if _, err := u.Client.CreateRepo(t.Context(), forge.NewRepo{Name: "ops", AutoInit: true, DefaultBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	return srv, u, writerParams{URL: srv.URL, User: u.Login, Password: u.Password}
}

// TestLayoutOnce: a fresh checkout creates the ops layout in one commit,
// and a second call changes nothing.
func TestLayoutOnce(t *testing.T) {
	srv, u, p := newOpsRepo(t)
	p.Dir = filepath.Join(t.TempDir(), "ops")
	r := open(p)
	ctx := t.Context()
	sha, err := r.EnsureLayout(ctx)
	if err != nil || sha == "" {
		t.Fatalf("first layout: %q, %v", sha, err)
	}
	again, err := r.EnsureLayout(ctx)
	if err != nil || again != "" {
		t.Fatalf("second layout committed %q, %v", again, err)
	}
	repo := u.Client.Repo(u.Login, "ops")
	for _, d := range ops.Layout {
		if _, err := repo.GetFile(ctx, d+"/.gitkeep", "main"); err != nil {
			t.Errorf("%s missing on the forge: %v", d, err)
		}
	}
	br, err := repo.GetBranch(ctx, "main")
	if err != nil || br.SHA != sha {
		t.Errorf("main at %+v, %v; want the layout commit %s", br, err, sha)
	}
	_ = srv
}

// TestTwoProcessesLoseNothing: two writer processes with checkouts of
// their own append 20 lines each to one file at the same time; all 40
// land.
func TestTwoProcessesLoseNothing(t *testing.T) {
	_, u, p := newOpsRepo(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"alpha", "beta"} {
		wp := p
		wp.Dir, wp.Name, wp.N = filepath.Join(t.TempDir(), "ops"), name, n
		raw, _ := json.Marshal(wp)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWriter+"="+string(raw))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("writer %s: %v\n%s", name, err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	data, err := u.Client.Repo(u.Login, "ops").GetFile(t.Context(), "journal/shared.md", "main")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data.Content)), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for _, name := range []string{"alpha", "beta"} {
		for i := range n {
			if !seen[fmt.Sprintf("%s %d", name, i)] {
				t.Errorf("lost %s %d", name, i)
			}
		}
	}
	if len(lines) != 2*n {
		t.Errorf("%d lines, want %d", len(lines), 2*n)
	}
}

// TestProtectedBranch: a primary branch that takes no direct pushes is
// said at once, not retried as a lost race.
func TestProtectedBranch(t *testing.T) {
	_, u, p := newOpsRepo(t)
	repo := u.Client.Repo(u.Login, "ops")
	if err := repo.SetBranchProtection(t.Context(), forge.Protection{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	p.Dir = filepath.Join(t.TempDir(), "ops")
	_, err := open(p).EnsureLayout(t.Context())
	if !errors.Is(err, ops.ErrProtected) {
		t.Fatalf("layout on a protected branch: %v", err)
	}
}
