package git_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A stopped rebase is seen and aborted, the primary branch checked out
// again; a locked worktree is preserved, an unlocked one is not.
func TestRepairHelpers(t *testing.T) {
	f := newFixture(t)
	g := newGit(nil)
	repo := cloneFixture(t, g, f)
	dir := repo.Dir()
	sh(t, dir, nil, "checkout", "-qb", "topic")
	commitIn(t, dir, "seed.txt", "topic\n")
	sh(t, dir, nil, "checkout", "-q", "main")
	commitIn(t, dir, "seed.txt", "main\n")
	sh(t, dir, nil, "checkout", "-q", "topic")
	_, _ = runAllowFail(dir, "rebase", "main")
	ctx := t.Context()
	if !repo.Rebasing(ctx, dir) {
		t.Fatal("no rebase seen in progress")
	}
	if err := repo.AbortRebase(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if repo.Rebasing(ctx, dir) {
		t.Fatal("rebase still in progress")
	}
	if err := repo.AbortRebase(ctx, dir); err != nil {
		t.Fatalf("abort with no rebase: %v", err)
	}
	if err := repo.CheckoutBranch(ctx, dir, "main"); err != nil {
		t.Fatal(err)
	}
	if b, err := repo.CurrentBranch(ctx, dir); err != nil || b != "main" {
		t.Fatalf("branch = %q %v", b, err)
	}
	locked, free := filepath.Join(t.TempDir(), "locked"), filepath.Join(t.TempDir(), "free")
	sh(t, dir, nil, "worktree", "add", "-q", "--detach", locked)
	sh(t, dir, nil, "worktree", "add", "-q", "--detach", free)
	sh(t, dir, nil, "worktree", "lock", locked)
	if !repo.Preserved(ctx, locked) || repo.Preserved(ctx, free) {
		t.Fatalf("preserved: locked %v, free %v", repo.Preserved(ctx, locked), repo.Preserved(ctx, free))
	}
	if _, err := os.Stat(locked); err != nil {
		t.Fatal(err)
	}
}
