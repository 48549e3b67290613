package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Dir      string // absolute path
	Head     string // commit checked out
	Branch   string // branch name, "" when detached
	Prunable bool   // its directory is gone
}

// Worktrees lists the clone's worktrees, the clone's own checkout first.
func (r *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	out, err := r.g.run(ctx, r.dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	var list []Worktree
	for block := range strings.SplitSeq(strings.TrimSpace(out), "\n\n") {
		var wt Worktree
		for line := range strings.SplitSeq(block, "\n") {
			key, val, _ := strings.Cut(line, " ")
			switch key {
			case "worktree":
				wt.Dir = val
			case "HEAD":
				wt.Head = val
			case "branch":
				wt.Branch = strings.TrimPrefix(val, "refs/heads/")
			case "prunable":
				wt.Prunable = true
			}
		}
		if wt.Dir != "" {
			list = append(list, wt)
		}
	}
	return list, nil
}

// find returns the worktree registered at dir.
func (r *Repo) find(ctx context.Context, dir string) (Worktree, bool, error) {
	list, err := r.Worktrees(ctx)
	if err != nil {
		return Worktree{}, false, err
	}
	want := canonical(dir)
	i := slices.IndexFunc(list, func(wt Worktree) bool { return canonical(wt.Dir) == want })
	if i < 0 {
		return Worktree{}, false, nil
	}
	return list[i], true, nil
}

// canonical makes paths comparable: absolute, cleaned, symlinks resolved
// where the path exists.
func canonical(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

// prune forgets worktrees whose directories are gone, so their branches can
// be checked out again.
func (r *Repo) prune(ctx context.Context) error {
	if _, err := r.g.run(ctx, r.dir, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	return nil
}

// checkFree fails unless dir is absent or an empty directory: a directory
// with content that git does not know as a worktree is never deleted on a
// guess.
func checkFree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	return fmt.Errorf("%s exists and is not a worktree of this clone: %w", dir, ErrNotClone)
}

// AddWorktree checks out branch in a new worktree at dir and reports whether
// it created anything. It is safe to call again after a restart:
//
//   - a worktree already at dir on branch is reused as it is, with its
//     uncommitted work (created is false);
//   - an existing local branch is checked out with its commits;
//   - a branch that exists only on origin is started from origin's copy, so
//     pushed work is picked up;
//   - otherwise branch is created from startRef (e.g. "origin/main"),
//     without upstream tracking.
//
// A worktree at dir on another branch wraps ErrWorktreeBusy; a non-empty
// directory that is not a worktree wraps ErrNotClone.
func (r *Repo) AddWorktree(ctx context.Context, dir, branch, startRef string) (created bool, err error) {
	defer r.g.lock(r.dir)()
	dir = canonical(dir)
	wt, ok, err := r.find(ctx, dir)
	if err != nil {
		return false, fmt.Errorf("add worktree %s: %w", dir, err)
	}
	if ok && !wt.Prunable {
		if wt.Branch == branch {
			return false, nil
		}
		return false, fmt.Errorf("add worktree %s for %s: it is on %q: %w", dir, branch, wt.Branch, ErrWorktreeBusy)
	}
	if err := r.prune(ctx); err != nil {
		return false, fmt.Errorf("add worktree %s: %w", dir, err)
	}
	if err := checkFree(dir); err != nil {
		return false, fmt.Errorf("add worktree: %w", err)
	}
	var args []string
	switch {
	case r.hasRef(ctx, "refs/heads/"+branch):
		args = []string{"worktree", "add", "--quiet", dir, branch}
	case r.hasRef(ctx, "refs/remotes/"+Remote+"/"+branch):
		args = []string{"worktree", "add", "--quiet", "--no-track", "-b", branch, dir, Remote + "/" + branch}
	default:
		args = []string{"worktree", "add", "--quiet", "--no-track", "-b", branch, dir, startRef}
	}
	if _, err := r.g.run(ctx, r.dir, args...); err != nil {
		return false, fmt.Errorf("add worktree %s for %s: %w", dir, branch, err)
	}
	return true, nil
}

func (r *Repo) hasRef(ctx context.Context, ref string) bool {
	_, err := r.g.run(ctx, r.dir, "show-ref", "--verify", "--quiet", ref)
	return err == nil
}

// AddDetachedWorktree checks out sha, detached, in a worktree at dir (a
// reviewer's read-only checkout). An existing worktree at dir is moved to
// sha, discarding local edits to tracked files. sha must be present in the
// clone: fetch first.
func (r *Repo) AddDetachedWorktree(ctx context.Context, dir, sha string) error {
	defer r.g.lock(r.dir)()
	dir = canonical(dir)
	wt, ok, err := r.find(ctx, dir)
	if err != nil {
		return fmt.Errorf("add detached worktree %s: %w", dir, err)
	}
	if ok && !wt.Prunable {
		if _, err := r.g.run(ctx, dir, "checkout", "--quiet", "--force", "--detach", sha); err != nil {
			return fmt.Errorf("add detached worktree %s at %s: %w", dir, sha, err)
		}
		return nil
	}
	if err := r.prune(ctx); err != nil {
		return fmt.Errorf("add detached worktree %s: %w", dir, err)
	}
	if err := checkFree(dir); err != nil {
		return fmt.Errorf("add detached worktree: %w", err)
	}
	if _, err := r.g.run(ctx, r.dir, "worktree", "add", "--quiet", "--detach", dir, sha); err != nil {
		return fmt.Errorf("add detached worktree %s at %s: %w", dir, sha, err)
	}
	return nil
}

// RemoveWorktree deletes the worktree at dir, with any uncommitted changes,
// and prunes stale worktree records. Its branch is kept. A missing dir is
// not an error; a directory that is not a worktree of this clone is left
// alone and wraps ErrNotClone.
func (r *Repo) RemoveWorktree(ctx context.Context, dir string) error {
	defer r.g.lock(r.dir)()
	dir = canonical(dir)
	wt, ok, err := r.find(ctx, dir)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	if ok && !wt.Prunable {
		// Twice --force: also remove a locked worktree.
		if _, err := r.g.run(ctx, r.dir, "worktree", "remove", "--force", "--force", dir); err != nil {
			return fmt.Errorf("remove worktree %s: %w", dir, err)
		}
	} else if err := checkFree(dir); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	} else if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	if err := r.prune(ctx); err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	return nil
}

// ConflictError is a rebase that stopped on conflicts; the rebase has been
// aborted and the worktree is back where it was. It wraps ErrConflict.
type ConflictError struct {
	Onto  string
	Files []string // paths with conflicts
	Err   error    // the failed rebase
}

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("rebase onto %s: %v in %s: %v", e.Onto, ErrConflict, strings.Join(e.Files, ", "), e.Err)
}

// Unwrap returns ErrConflict and the git error.
func (e *ConflictError) Unwrap() []error { return []error{ErrConflict, e.Err} }

// Rebase rebases the branch checked out in the worktree at dir onto onto
// (e.g. "origin/main"). A rebase left over from a crash is aborted first. On
// conflicts the rebase is aborted and a *ConflictError names the files, so
// the caller can hand them to the model.
func (r *Repo) Rebase(ctx context.Context, dir, onto string) error {
	if r.rebaseInProgress(ctx, dir) {
		if _, err := r.g.run(ctx, dir, "rebase", "--abort"); err != nil {
			return fmt.Errorf("abort stale rebase in %s: %w", dir, err)
		}
	}
	_, rebaseErr := r.g.run(ctx, dir, "rebase", "--quiet", onto)
	if rebaseErr == nil {
		return nil
	}
	if !r.rebaseInProgress(ctx, dir) {
		return fmt.Errorf("rebase onto %s: %w", onto, rebaseErr)
	}
	out, _ := r.g.run(ctx, dir, "diff", "--name-only", "--diff-filter=U")
	files := strings.Fields(out)
	if _, err := r.g.run(ctx, dir, "rebase", "--abort"); err != nil {
		return fmt.Errorf("abort rebase onto %s: %w (after: %w)", onto, err, rebaseErr)
	}
	return &ConflictError{Onto: onto, Files: files, Err: rebaseErr}
}

// rebaseInProgress reports whether the worktree at dir is in the middle of a
// rebase.
func (r *Repo) rebaseInProgress(ctx context.Context, dir string) bool {
	for _, name := range []string{"rebase-merge", "rebase-apply"} {
		out, err := r.g.run(ctx, dir, "rev-parse", "--git-path", name)
		if err != nil {
			continue
		}
		p := strings.TrimSpace(out)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
