package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Rebasing reports whether the checkout at dir is in the middle of a
// rebase (rebase-merge or rebase-apply exists).
func (r *Repo) Rebasing(ctx context.Context, dir string) bool { return r.rebaseInProgress(ctx, dir) }

// AbortRebase aborts the rebase in progress in the checkout at dir; no
// rebase in progress is not an error.
func (r *Repo) AbortRebase(ctx context.Context, dir string) error {
	if !r.rebaseInProgress(ctx, dir) {
		return nil
	}
	if _, err := r.g.run(ctx, dir, "rebase", "--abort"); err != nil {
		return fmt.Errorf("abort rebase in %s: %w", dir, err)
	}
	return nil
}

// CheckoutBranch checks out the existing local branch in the checkout at
// dir. It refuses (as git does) when uncommitted changes would be lost.
func (r *Repo) CheckoutBranch(ctx context.Context, dir, branch string) error {
	if _, err := r.g.run(ctx, dir, "checkout", "--quiet", branch, "--"); err != nil {
		return fmt.Errorf("check out %s in %s: %w", branch, dir, err)
	}
	return nil
}

// Preserved reports whether the worktree at dir is locked (git worktree
// lock): a worktree kept on purpose, which no sweep may remove.
func (r *Repo) Preserved(ctx context.Context, dir string) bool {
	out, err := r.g.run(ctx, dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(strings.TrimSpace(out), "locked"))
	return err == nil
}
