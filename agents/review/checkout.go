package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/disinto/disinto/lib/git"
)

// GitCheckout implements Checkout with a clone of the project and one
// detached worktree per pull request, <Root>/pr-<N>. The head is fetched as
// refs/pull/<N>/head, which the forge keeps for deleted branches and for
// pull requests from forks alike.
type GitCheckout struct {
	git      *git.Git
	url      string
	cloneDir string
	root     string

	mu   sync.Mutex // serialises fetches and worktree changes of the clone
	repo *git.Repo  // nil until the clone was made (lazily, on first use)
}

var _ Checkout = (*GitCheckout)(nil)

// NewGitCheckout returns a Checkout that clones url into cloneDir on first
// use and keeps worktrees under root. g carries the credentials.
func NewGitCheckout(g *git.Git, url, cloneDir, root string) *GitCheckout {
	if abs, err := filepath.Abs(cloneDir); err == nil {
		cloneDir = abs
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return &GitCheckout{git: g, url: url, cloneDir: cloneDir, root: root}
}

// dir is the worktree of pull request pr.
func (g *GitCheckout) dir(pr int64) string {
	return filepath.Join(g.root, fmt.Sprintf("pr-%d", pr))
}

// clone returns the clone, making it on first use. Call with g.mu held.
func (g *GitCheckout) clone(ctx context.Context) (*git.Repo, error) {
	if g.repo != nil {
		return g.repo, nil
	}
	r, err := g.git.EnsureClone(ctx, g.url, g.cloneDir, "")
	if err != nil {
		return nil, fmt.Errorf("review clone: %w", err)
	}
	g.repo = r
	return r, nil
}

// Checkout implements Checkout.
func (g *GitCheckout) Checkout(ctx context.Context, pr int64, sha string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.clone(ctx)
	if err != nil {
		return "", err
	}
	// No destination ref: the objects are what matters, and the worktree's
	// HEAD (and its reflog) keeps the reviewed commits alive for the
	// incremental diff of a re-review.
	if err := r.Fetch(ctx, fmt.Sprintf("refs/pull/%d/head", pr)); err != nil {
		return "", fmt.Errorf("fetch pull request %d: %w", pr, err)
	}
	dir := g.dir(pr)
	if err := r.AddDetachedWorktree(ctx, dir, sha); err != nil {
		return "", fmt.Errorf("check out pull request %d at %s: %w", pr, short(sha), err)
	}
	return dir, nil
}

// Diff implements Checkout. from counts as an ancestor of to when the diff
// from..to equals the diff from their merge base to to, that is when the
// new commits sit on top of the reviewed tree (a rebase or an amended
// commit breaks this).
func (g *GitCheckout) Diff(ctx context.Context, dir, from, to string) (string, bool, error) {
	r := g.local()
	direct, err := r.Diff(ctx, dir, from, to)
	if err != nil {
		return "", false, err
	}
	sinceBase, err := r.Diff(ctx, dir, from+"..."+to, "")
	if err != nil {
		return "", false, err
	}
	return direct, direct == sinceBase, nil
}

// Remove implements Checkout.
func (g *GitCheckout) Remove(ctx context.Context, pr int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := os.Stat(filepath.Join(g.cloneDir, ".git")); errors.Is(err, os.ErrNotExist) {
		return nil // never cloned: no worktree either
	}
	return g.local().RemoveWorktree(ctx, g.dir(pr))
}

// local returns the clone without fetching (it may not exist yet).
func (g *GitCheckout) local() *git.Repo {
	return g.git.Open(g.cloneDir)
}
