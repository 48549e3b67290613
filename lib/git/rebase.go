package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// rebaseCleanupTimeout bounds removing RebaseOnto's private worktree,
// which runs even when the caller's context has ended.
const rebaseCleanupTimeout = 30 * time.Second

// RebaseOnto replays the commits of rev (a ref or commit of the clone)
// that onto lacks on top of onto and returns the new head. It works in a
// private detached worktree of the clone, removed afterwards, so no
// branch, ref or other worktree moves: the caller decides what to do with
// the result (push it, say). The commits keep their authors and get the
// clone's identity as committer. A rev that already contains onto comes
// back unchanged. On conflicts the rebase is aborted and a *ConflictError,
// which wraps ErrConflict, names the files.
func (r *Repo) RebaseOnto(ctx context.Context, rev, onto string) (string, error) {
	head, err := r.revParse(ctx, r.dir, rev)
	if err != nil {
		return "", fmt.Errorf("rebase %s onto %s: %w", rev, onto, err)
	}
	base, err := r.revParse(ctx, r.dir, onto)
	if err != nil {
		return "", fmt.Errorf("rebase %s onto %s: %w", rev, onto, err)
	}
	if ok, err := r.IsAncestor(ctx, base, head); err != nil || ok {
		return head, err
	}
	dir, err := os.MkdirTemp("", "disinto-rebase-*")
	if err != nil {
		return "", fmt.Errorf("rebase %s onto %s: %w", rev, onto, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebaseCleanupTimeout)
		defer cancel()
		if rerr := r.RemoveWorktree(cctx, dir); rerr != nil {
			r.g.log.Warn().Str("dir", dir).Str("error", rerr.Error()).Msg("remove rebase worktree")
			_ = os.RemoveAll(dir)
			_ = r.prune(cctx)
		}
	}()
	if err := r.AddDetachedWorktree(ctx, dir, head); err != nil {
		return "", fmt.Errorf("rebase %s onto %s: %w", rev, onto, err)
	}
	if err := r.Rebase(ctx, dir, base); err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			ce.Onto = onto
		}
		return "", err
	}
	return r.HeadSHA(ctx, dir)
}

// IsAncestor reports whether commit a is an ancestor of commit b (or b
// itself).
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.g.run(ctx, r.dir, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
}

// ResetBranch checks out branch in the clone, made or moved to rev
// (`git checkout -B`). It refuses, changing nothing, when uncommitted
// changes would be lost. For a session's checkout, run it through a Git
// that runs as the session's user.
func (r *Repo) ResetBranch(ctx context.Context, branch, rev string) error {
	if _, err := r.g.exec(ctx, call{dir: r.dir, noCfg: true, args: []string{"checkout", "--quiet", "--no-track", "-B", branch, rev}}); err != nil {
		return fmt.Errorf("reset %s to %s: %w", branch, strings.TrimSpace(rev), err)
	}
	return nil
}
