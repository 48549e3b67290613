package review

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox"
)

// GitCheckout implements Checkout with a clone of the project and one
// sandbox workspace per pull request, holding a standalone copy of the
// head commit, detached. The head is fetched as refs/pull/<N>/head, which
// the forge keeps for deleted branches and for pull requests from forks
// alike, and pinned in the clone under refs/disinto/pull/<N>/ so the
// incremental diff of a re-review finds the commits reviewed before. The
// copy is the session's and untrusted: the agent never runs git in it.
type GitCheckout struct {
	o CheckoutOptions

	mu   sync.Mutex // serialises fetches and checkouts of the clone
	repo *git.Repo  // nil until the clone was made (lazily, on first use)
}

// CheckoutOptions configures a GitCheckout.
type CheckoutOptions struct {
	// Git carries the review bot's credentials.
	Git *git.Git
	// URL is the project's clone URL, without credentials.
	URL string
	// CloneDir is the agent's own clone.
	CloneDir string
	// Primary is the project's primary branch.
	Primary string
	// Sandbox holds the sessions' workspaces; KeyPrefix starts their keys
	// (e.g. "review-proj").
	Sandbox   *sandbox.Sandbox
	KeyPrefix string
}

var _ Checkout = (*GitCheckout)(nil)

// NewGitCheckout returns a Checkout that clones o.URL into o.CloneDir on
// first use.
func NewGitCheckout(o CheckoutOptions) *GitCheckout {
	if abs, err := filepath.Abs(o.CloneDir); err == nil {
		o.CloneDir = abs
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	return &GitCheckout{o: o}
}

// key is the workspace key of pull request pr.
func (g *GitCheckout) key(pr int64) string {
	return sandbox.Key(g.o.KeyPrefix, "pr", strconv.FormatInt(pr, 10))
}

// pin is the clone's ref keeping commit sha of pull request pr alive.
func pin(pr int64, sha string) string { return fmt.Sprintf("refs/disinto/pull/%d/%s", pr, sha) }

// clone returns the clone, making it on first use. Call with g.mu held.
func (g *GitCheckout) clone(ctx context.Context) (*git.Repo, error) {
	if g.repo != nil {
		return g.repo, nil
	}
	r, err := g.o.Git.EnsureClone(ctx, g.o.URL, g.o.CloneDir, "")
	if err != nil {
		return nil, fmt.Errorf("review clone: %w", err)
	}
	g.repo = r
	return r, nil
}

// Checkout implements Checkout. The workspace keeps its place (and so a
// resumed session its conversation); its copy is made anew at sha, so
// nothing an earlier session left in it survives.
func (g *GitCheckout) Checkout(ctx context.Context, pr int64, sha string) (*sandbox.Workspace, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.clone(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.Fetch(ctx, fmt.Sprintf("+refs/pull/%d/head:%s", pr, pin(pr, sha))); err != nil {
		return nil, fmt.Errorf("fetch pull request %d: %w", pr, err)
	}
	if got, err := r.RefSHA(ctx, pin(pr, sha)); err != nil || got != sha {
		_ = r.DeleteRef(ctx, pin(pr, sha))
		return nil, fmt.Errorf("check out pull request %d at %s: the pull ref is at %s now", pr, short(sha), short(got))
	}
	ws, err := g.o.Sandbox.Workspace(g.key(pr))
	if err != nil {
		return nil, err
	}
	if err := ws.Reap(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(ws.Repo()); err != nil {
		return nil, fmt.Errorf("check out pull request %d: %w", pr, err)
	}
	name, email := git.Identity("")
	if err := r.Seed(ctx, ws.Repo(), git.SeedOptions{Detach: sha, RemoteURL: g.o.URL, Name: name, Email: email}); err != nil {
		return nil, fmt.Errorf("check out pull request %d at %s: %w", pr, short(sha), err)
	}
	if err := ws.Own(ws.Repo()); err != nil {
		return nil, err
	}
	return ws, nil
}

// Diff implements Checkout. from counts as an ancestor of to when the diff
// from..to equals the diff from their merge base to to, that is when the
// new commits sit on top of the reviewed tree (a rebase or an amended
// commit breaks this).
func (g *GitCheckout) Diff(ctx context.Context, from, to string) (string, bool, error) {
	r := g.local()
	direct, err := r.Diff(ctx, r.Dir(), from, to)
	if err != nil {
		return "", false, err
	}
	sinceBase, err := r.Diff(ctx, r.Dir(), from+"..."+to, "")
	if err != nil {
		return "", false, err
	}
	return direct, direct == sinceBase, nil
}

// PrimaryFS implements Checkout.
func (g *GitCheckout) PrimaryFS(ctx context.Context) (fs.FS, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.clone(ctx)
	if err != nil {
		return nil, err
	}
	return r.RevFS(ctx, "refs/remotes/origin/"+g.o.Primary), nil
}

// Remove implements Checkout.
func (g *GitCheckout) Remove(ctx context.Context, pr int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.o.Sandbox.Remove(g.key(pr)); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(g.o.CloneDir, ".git")); err != nil {
		return nil // never cloned: nothing pinned either
	}
	return g.local().DeleteRefs(ctx, fmt.Sprintf("refs/disinto/pull/%d/", pr))
}

// local returns the clone without fetching (it may not exist yet).
func (g *GitCheckout) local() *git.Repo {
	return g.o.Git.Open(g.o.CloneDir)
}
