package dev

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
)

// gitOps is the git work the agent needs. Every method takes a context and
// runs against the agent's own clone; secrets never appear in argv, remote
// URLs or errors.
type gitOps interface {
	// Worktree makes dir a worktree on branch: reused when it already is
	// one, else created from the remote branch when that exists, else from
	// the primary branch. Local commits are never discarded.
	Worktree(ctx context.Context, dir, branch string) error
	// RemoteHead returns the SHA of branch on the forge, "" when absent.
	RemoteHead(ctx context.Context, branch string) (string, error)
	// Head returns the SHA checked out in dir.
	Head(ctx context.Context, dir string) (string, error)
	// Ahead counts the commits of dir's HEAD that the primary branch lacks.
	Ahead(ctx context.Context, dir string) (int, error)
	// Behind reports whether the primary branch on the forge has changes
	// that branch on the forge lacks (since their merge base).
	Behind(ctx context.Context, branch string) (bool, error)
	// Push pushes dir's HEAD to branch (with lease).
	Push(ctx context.Context, dir, branch string) error
	// EmptyCommit commits nothing with msg (to re-trigger CI).
	EmptyCommit(ctx context.Context, dir, msg string) error
	// RemoveWorktree removes the worktree at dir.
	RemoveWorktree(ctx context.Context, dir string) error
	// PushMirror pushes sha as the primary branch to the mirror url.
	PushMirror(ctx context.Context, name, url, sha string) error
	// SessionEnv is what a session needs so its own git push works.
	SessionEnv() map[string]string
}

// GitOptions configures the agent's git backend.
type GitOptions struct {
	// Clone is the directory of the agent's own clone of the project
	// (one per identity, so two daemons never share a clone).
	Clone string
	// RemoteURL is the repository's clone URL, without credentials.
	RemoteURL string
	// ForgeURL scopes the credentials to the forge's host.
	ForgeURL string
	// User and Password authenticate pushes over HTTP.
	User, Password string
	// Primary is the primary branch.
	Primary string
	// Redactor masks further secrets in errors.
	Redactor *redact.Redactor
	// Log receives one debug line per git command.
	Log zerolog.Logger
}

// Git is the agent's git backend on lib/git: its own clone, worktrees per
// issue, pushes authenticated by a credential helper that reads the
// password from the environment of the git (or session) process only.
type Git struct {
	o  GitOptions
	g  *git.Git
	mu sync.Mutex
	r  *git.Repo
}

var _ gitOps = (*Git)(nil)

// NewGit returns the git backend of the agent.
func NewGit(o GitOptions) *Git {
	forgeURL := o.ForgeURL
	if forgeURL == "" {
		forgeURL = o.RemoteURL
	}
	return &Git{o: o, g: git.New(git.Options{
		Credentials: &git.Credentials{URL: forgeURL, Username: o.User, Password: o.Password},
		Redactor:    o.Redactor, Log: o.Log,
	})}
}

// repo returns the clone, making and configuring it once per process.
func (x *Git) repo(ctx context.Context) (*git.Repo, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.r != nil {
		return x.r, nil
	}
	r, err := x.g.EnsureClone(ctx, x.o.RemoteURL, x.o.Clone, "")
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	if err := r.ConfigureWorktreeAuth(ctx); err != nil {
		return nil, err
	}
	name, email := git.Identity(x.o.User)
	if err := r.ConfigureIdentity(ctx, name, email); err != nil {
		return nil, err
	}
	x.r = r
	return r, nil
}

// Worktree implements gitOps.
func (x *Git) Worktree(ctx context.Context, dir, branch string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	if err := r.Fetch(ctx); err != nil {
		return err
	}
	_, err = r.AddWorktree(ctx, dir, branch, "origin/"+x.o.Primary)
	return err
}

// RemoteHead implements gitOps.
func (x *Git) RemoteHead(ctx context.Context, branch string) (string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", err
	}
	sha, err := r.RemoteSHA(ctx, branch)
	if errors.Is(err, git.ErrNotFound) {
		return "", nil
	}
	return strings.TrimSpace(sha), err
}

// Head implements gitOps.
func (x *Git) Head(ctx context.Context, dir string) (string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", err
	}
	return r.HeadSHA(ctx, dir)
}

// Ahead implements gitOps.
func (x *Git) Ahead(ctx context.Context, dir string) (int, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return 0, err
	}
	if err := r.Fetch(ctx, x.o.Primary); err != nil {
		return 0, err
	}
	return r.CommitsAhead(ctx, dir, "origin/"+x.o.Primary)
}

// Behind implements gitOps: the diff from the merge base of the two remote
// branches to the primary's head is not empty.
func (x *Git) Behind(ctx context.Context, branch string) (bool, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return false, err
	}
	if err := r.Fetch(ctx, x.o.Primary, branch); err != nil {
		return false, err
	}
	d, err := r.Diff(ctx, r.Dir(), "origin/"+branch+"...origin/"+x.o.Primary, "")
	if err != nil {
		return false, fmt.Errorf("behind %s: %w", x.o.Primary, err)
	}
	return strings.TrimSpace(d) != "", nil
}

// Push implements gitOps.
func (x *Git) Push(ctx context.Context, dir, branch string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	return r.Push(ctx, dir, branch, git.PushOptions{ForceWithLease: true})
}

// EmptyCommit implements gitOps.
func (x *Git) EmptyCommit(ctx context.Context, dir, msg string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	return r.Commit(ctx, dir, msg, true)
}

// RemoveWorktree implements gitOps.
func (x *Git) RemoveWorktree(ctx context.Context, dir string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	return r.RemoveWorktree(ctx, dir)
}

// PushMirror implements gitOps.
func (x *Git) PushMirror(ctx context.Context, name, url, sha string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	if err := r.Fetch(ctx); err != nil {
		return err
	}
	if err := r.PushMirror(ctx, url, sha+":refs/heads/"+x.o.Primary); err != nil {
		return fmt.Errorf("mirror %s: %w", name, err)
	}
	return nil
}

// SessionEnv implements gitOps.
func (x *Git) SessionEnv() map[string]string {
	out := map[string]string{}
	for _, kv := range x.g.WorktreeEnv() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
