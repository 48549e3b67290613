package git_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
)

// isolatedEnv keeps the host's git configuration out of the tests.
var isolatedEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// sh runs the real git binary as a test fixture would, failing the test on
// error, and returns its trimmed output.
func sh(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), isolatedEnv...), env...)
	cmd.Env = append(cmd.Env,
		"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
		"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixture is a bare "forge" repository with a main branch and a seed clone
// that plays a human pushing to it.
type fixture struct {
	bare string // path of the bare repository
	url  string // file:// URL of the bare repository
	seed string // a separate clone for pushing upstream changes
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git")
	}
	root := t.TempDir()
	f := &fixture{bare: filepath.Join(root, "remote.git"), seed: filepath.Join(root, "seed")}
	f.url = "file://" + f.bare
	sh(t, root, nil, "init", "--quiet", "--bare", "-b", "main", f.bare)
	sh(t, root, nil, "init", "--quiet", "-b", "main", f.seed)
	f.commit(t, "README.md", "hello\n", "initial")
	sh(t, f.seed, nil, "remote", "add", "origin", f.url)
	sh(t, f.seed, nil, "push", "--quiet", "origin", "main")
	return f
}

// commit writes a file in the seed clone and commits it.
func (f *fixture) commit(t *testing.T, name, content, msg string) string {
	t.Helper()
	writeFile(t, filepath.Join(f.seed, name), content)
	sh(t, f.seed, nil, "add", name)
	sh(t, f.seed, nil, "commit", "--quiet", "-m", msg)
	return sh(t, f.seed, nil, "rev-parse", "HEAD")
}

// pushMain commits in the seed clone and pushes main to the remote.
func (f *fixture) pushMain(t *testing.T, name, content string) string {
	t.Helper()
	sha := f.commit(t, name, content, "upstream "+name)
	sh(t, f.seed, nil, "push", "--quiet", "origin", "main")
	return sha
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newGit returns a Git isolated from the host's configuration.
func newGit(creds *git.Credentials) *git.Git {
	return git.New(git.Options{Credentials: creds, Env: isolatedEnv})
}

// cloneFixture clones f into a fresh directory with a bot identity.
func cloneFixture(t *testing.T, g *git.Git, f *fixture) *git.Repo {
	t.Helper()
	repo, err := g.EnsureClone(t.Context(), f.url, filepath.Join(t.TempDir(), "clone"), "main")
	if err != nil {
		t.Fatal(err)
	}
	name, email := git.Identity("dev-bot")
	if err := repo.ConfigureIdentity(t.Context(), name, email); err != nil {
		t.Fatal(err)
	}
	return repo
}

// commitIn writes a file in a worktree and commits it with the clone's
// identity.
func commitIn(t *testing.T, dir, name, content string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, name), content)
	cmd := exec.Command("git", "add", name)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), isolatedEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "commit", "--quiet", "-m", "change "+name)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), isolatedEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
}

// runAllowFail runs git in dir and returns its output and error without
// failing the test.
func runAllowFail(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), isolatedEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
