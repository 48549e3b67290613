package git_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
)

// pushBranch commits name on a new branch started from main in the seed
// clone, pushes it and returns its head; the seed is back on main after.
func (f *fixture) pushBranch(t *testing.T, branch, name, content string) string {
	t.Helper()
	sh(t, f.seed, nil, "checkout", "--quiet", "-b", branch, "main")
	sha := f.commit(t, name, content, "branch "+name)
	sh(t, f.seed, nil, "push", "--quiet", "origin", branch)
	sh(t, f.seed, nil, "checkout", "--quiet", "main")
	return sha
}

func TestRebaseOnto(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := f.pushBranch(t, "fix/issue-3", "mine.txt", "mine\n")
	upstream := f.pushMain(t, "theirs.txt", "theirs\n")
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	before := sh(t, repo.Dir(), nil, "for-each-ref")

	head, err := repo.RebaseOnto(ctx, "origin/fix/issue-3", "origin/main")
	if err != nil {
		t.Fatal(err)
	}
	if head == old {
		t.Fatal("nothing rebased")
	}
	if parent := sh(t, repo.Dir(), nil, "rev-parse", head+"~1"); parent != upstream {
		t.Errorf("rebased onto %s, want %s", parent, upstream)
	}
	if got := sh(t, repo.Dir(), nil, "show", "-s", "--format=%an|%cn", head); got != "fixture|dev-bot" {
		t.Errorf("author|committer = %q, want the author kept and the clone's identity as committer", got)
	}
	if files := sh(t, repo.Dir(), nil, "ls-tree", "--name-only", head); !strings.Contains(files, "mine.txt") || !strings.Contains(files, "theirs.txt") {
		t.Errorf("rebased tree lacks a side: %s", files)
	}
	// Nothing of the clone moved, and the private worktree is gone.
	if after := sh(t, repo.Dir(), nil, "for-each-ref"); after != before {
		t.Errorf("refs moved:\n%s\nwant\n%s", after, before)
	}
	if wts, err := repo.Worktrees(ctx); err != nil || len(wts) != 1 {
		t.Errorf("worktrees after the rebase: %+v, %v", wts, err)
	}

	// A branch that already contains onto comes back as it is.
	again, err := repo.RebaseOnto(ctx, head, "origin/main")
	if err != nil || again != head {
		t.Fatalf("RebaseOnto of an up-to-date head = %s, %v; want %s", again, err, head)
	}
}

func TestRebaseOntoConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.pushBranch(t, "fix/issue-4", "README.md", "mine\n")
	f.pushMain(t, "README.md", "theirs\n")
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	_, err := repo.RebaseOnto(ctx, "origin/fix/issue-4", "origin/main")
	var ce *git.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, git.ErrConflict) {
		t.Fatalf("RebaseOnto = %v, want a ConflictError", err)
	}
	if ce.Onto != "origin/main" || len(ce.Files) != 1 || ce.Files[0] != "README.md" {
		t.Errorf("conflict = %+v, want README.md onto origin/main", ce)
	}
	if wts, err := repo.Worktrees(ctx); err != nil || len(wts) != 1 {
		t.Errorf("worktrees after the conflict: %+v, %v", wts, err)
	}
	if _, err := repo.RebaseOnto(ctx, "origin/no-such-branch", "origin/main"); !errors.Is(err, git.ErrNotFound) {
		t.Errorf("RebaseOnto of a missing ref = %v, want ErrNotFound", err)
	}
}

func TestResetBranchAndIsAncestor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.pushBranch(t, "fix/issue-5", "a.txt", "a\n")
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	if ok, err := repo.IsAncestor(ctx, "origin/main", first); err != nil || !ok {
		t.Fatalf("IsAncestor(main, branch) = %v, %v", ok, err)
	}
	if ok, err := repo.IsAncestor(ctx, first, "origin/main"); err != nil || ok {
		t.Fatalf("IsAncestor(branch, main) = %v, %v", ok, err)
	}
	if err := repo.ResetBranch(ctx, "fix/issue-5", first); err != nil {
		t.Fatal(err)
	}
	if b, _ := repo.CurrentBranch(ctx, repo.Dir()); b != "fix/issue-5" {
		t.Errorf("checked out %q", b)
	}
	if err := repo.ResetBranch(ctx, "fix/issue-5", "origin/main"); err != nil {
		t.Fatal(err)
	}
	if h, _ := repo.HeadSHA(ctx, repo.Dir()); h != sh(t, repo.Dir(), nil, "rev-parse", "origin/main") {
		t.Errorf("head %s after reset to main", h)
	}
}
