package review_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox"
)

var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
	"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid"}

func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func commitFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", name)
	gitT(t, dir, "commit", "--quiet", "-m", "change "+name)
	return gitT(t, dir, "rev-parse", "HEAD")
}

// The forge keeps refs/pull/N/head; a bare repository with that ref plays
// the forge here (the agent tests use the real one).
func TestGitCheckout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	bare, seed := filepath.Join(root, "forge.git"), filepath.Join(root, "seed")
	gitT(t, root, "init", "--quiet", "--bare", "-b", "main", bare)
	gitT(t, root, "init", "--quiet", "-b", "main", seed)
	base := commitFile(t, seed, "README.md", "hello\n")
	gitT(t, seed, "remote", "add", "origin", "file://"+bare)
	gitT(t, seed, "push", "--quiet", "origin", "main")
	gitT(t, seed, "checkout", "--quiet", "-b", "fix")
	h1 := commitFile(t, seed, "a.txt", "one\n")
	// The branch itself is never pushed: as for a fork or a deleted branch,
	// only the pull ref exists.
	gitT(t, seed, "push", "--quiet", "origin", "HEAD:refs/pull/5/head")

	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}})
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(root, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	co := review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: "file://" + bare, CloneDir: filepath.Join(root, "clone"),
		Sandbox: sb, KeyPrefix: "review-p"})

	ws, err := co.Checkout(ctx, 5, h1)
	if err != nil {
		t.Fatal(err)
	}
	dir := ws.Repo()
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != h1 {
		t.Fatalf("HEAD = %s, want %s", got, h1)
	}
	// Leftovers of an earlier session are discarded on the next checkout,
	// and a hook it planted in its copy never runs for the agent.
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("scribble\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(root, "planted")
	gitT(t, dir, "config", "core.fsmonitor", "touch "+planted)

	h2 := commitFile(t, seed, "b.txt", "two\n")
	gitT(t, seed, "push", "--quiet", "--force", "origin", "HEAD:refs/pull/5/head")
	ws2, err := co.Checkout(ctx, 5, h2)
	if err != nil {
		t.Fatal(err)
	}
	if dir2 := ws2.Repo(); dir2 != dir {
		t.Fatalf("worktree moved: %s then %s (a resumed session would not find its conversation)", dir, dir2)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != h2 {
		t.Fatalf("HEAD = %s, want %s", got, h2)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Errorf("a.txt = %q, local edits survived", b)
	}
	inc, ancestor, err := co.Diff(ctx, h1, h2)
	if err != nil || !ancestor {
		t.Fatalf("Diff h1..h2 = ancestor %t, %v", ancestor, err)
	}
	if !strings.Contains(inc, "+++ b/b.txt") || strings.Contains(inc, "a.txt") {
		t.Errorf("incremental diff holds more than h1..h2:\n%s", inc)
	}

	// A force-push that rewrites history: h2 is not an ancestor of h3.
	gitT(t, seed, "reset", "--quiet", "--hard", base)
	h3 := commitFile(t, seed, "a.txt", "one, amended\n")
	gitT(t, seed, "push", "--quiet", "--force", "origin", "HEAD:refs/pull/5/head")
	if _, err := co.Checkout(ctx, 5, h3); err != nil {
		t.Fatal(err)
	}
	inc, ancestor, err = co.Diff(ctx, h2, h3)
	if err != nil || ancestor {
		t.Fatalf("Diff h2..h3 after a rewrite = ancestor %t, %v", ancestor, err)
	}
	if !strings.Contains(inc, "b.txt") || !strings.Contains(inc, "+one, amended") {
		t.Errorf("tree diff misses the changes:\n%s", inc)
	}
	if _, _, err := co.Diff(ctx, strings.Repeat("e", 40), h3); err == nil {
		t.Error("Diff from an unknown commit succeeded")
	}

	if _, err := os.Stat(planted); !os.IsNotExist(err) {
		t.Errorf("a hook planted in the session's copy ran: %v", err)
	}
	if err := co.Remove(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if err := co.Remove(ctx, 5); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := co.Remove(ctx, 99); err != nil {
		t.Errorf("Remove of a pull request never checked out: %v", err)
	}
	if _, err := co.Checkout(ctx, 6, h1); err == nil {
		t.Error("Checkout of a pull request without a pull ref succeeded")
	}
}

func gitOK(dir string, args ...string) bool {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	return cmd.Run() == nil
}
