package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// gitOps is the git work the agent needs. Every method takes a context and
// runs against the agent's own clone; secrets never appear in argv, remote
// URLs or errors. A session's checkout lives in its workspace and is
// untrusted: the agent makes it, refreshes it as the session's own user,
// and reads commits back from it, but never runs git inside it itself.
type gitOps interface {
	// Prepare makes ws's checkout ready for a session on branch: made on
	// first use from the remote branch when that exists, else from the
	// primary branch; an existing one gets the forge's current primary
	// and branch heads (and is fast-forwarded to the latter when it can
	// be). Local commits are never discarded. An existing checkout that
	// would lead git beyond itself is refused with a
	// *git.UnsafeCheckoutError.
	Prepare(ctx context.Context, ws *sandbox.Workspace, branch string) error
	// Collect reads branch back from ws's checkout into the clone and
	// returns its head ("" when the checkout has no such branch) and how
	// many of its commits the primary branch lacks. A checkout that would
	// lead git beyond itself is refused unread with a
	// *git.UnsafeCheckoutError.
	Collect(ctx context.Context, ws *sandbox.Workspace, branch string) (head string, ahead int, err error)
	// RemoteHead returns the SHA of branch on the forge, "" when absent.
	RemoteHead(ctx context.Context, branch string) (string, error)
	// Behind reports whether the primary branch on the forge has changes
	// that branch on the forge lacks (since their merge base).
	Behind(ctx context.Context, branch string) (bool, error)
	// Push pushes commit sha of the clone to branch (with lease).
	Push(ctx context.Context, sha, branch string) error
	// Rebase rebases branch on the forge onto the forge's primary branch
	// in a private worktree of the clone (never a session's checkout) and
	// pushes the result with a lease on the old head; it returns the new
	// head, the old one when there was nothing to rebase. A conflict
	// wraps git.ErrConflict and pushes nothing.
	Rebase(ctx context.Context, branch string) (string, error)
	// RemoteBranches returns the forge's branches whose names start with
	// prefix, mapped to their heads.
	RemoteBranches(ctx context.Context, prefix string) (map[string]string, error)
	// EmptyCommit pushes a commit that changes nothing on top of branch
	// on the forge (to re-trigger CI) and returns it.
	EmptyCommit(ctx context.Context, branch, msg string) (string, error)
	// PrimaryFS returns the files of the primary branch as the forge has
	// them: project conventions a session cannot have changed.
	PrimaryFS(ctx context.Context) (fs.FS, error)
	// Changes returns the diff from commit base to commit head of the
	// clone as a maintainer must read it (git.Repo.ReviewDiff); base ""
	// is head's merge base with the forge's primary branch.
	Changes(ctx context.Context, base, head string) (string, error)
	// Hold puts commit sha of the clone on the forge as heldRef(branch):
	// no branch, so no CI runs it and no push event announces it, but a
	// maintainer can fetch and read it.
	Hold(ctx context.Context, sha, branch string) error
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
	name, email := git.Identity(x.o.User)
	if err := r.ConfigureIdentity(ctx, name, email); err != nil {
		return nil, err
	}
	x.r = r
	return r, nil
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

// sessionRef is where the commits of a session's branch are read back to.
func sessionRef(branch string) string { return "refs/disinto/session/" + branch }

// Prepare implements gitOps.
func (x *Git) Prepare(ctx context.Context, ws *sandbox.Workspace, branch string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	if err := r.Fetch(ctx); err != nil {
		return err
	}
	dir := ws.Repo()
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		name, email := git.Identity(x.o.User)
		if err := r.Seed(ctx, dir, git.SeedOptions{Branch: branch, Start: "origin/" + x.o.Primary,
			RemoteURL: x.o.RemoteURL, Name: name, Email: email}); err != nil {
			return err
		}
		return ws.Own(dir)
	} else if err != nil {
		return err
	}
	// An existing checkout is the session's: refresh it as the session's
	// user from a bundle of the forge's heads, unless it would lead that
	// git elsewhere or block it.
	if err := git.CheckCheckout(dir); err != nil {
		return err
	}
	refs := []string{"refs/remotes/origin/" + x.o.Primary}
	if sha, err := r.RefSHA(ctx, "refs/remotes/origin/"+branch); err != nil {
		return err
	} else if sha != "" {
		refs = append(refs, "refs/remotes/origin/"+branch)
	}
	bundle := filepath.Join(ws.Dir(), "refresh.bundle")
	if err := r.Bundle(ctx, bundle, refs...); err != nil {
		return err
	}
	defer os.Remove(bundle)
	sg := x.sessionGit(ws).Open(dir)
	if err := sg.FetchBundle(ctx, bundle, "+refs/remotes/origin/*:refs/remotes/origin/*"); err != nil {
		return err
	}
	if len(refs) > 1 {
		// The forge's branch may be ahead (an empty commit that re-ran
		// CI); a checkout that diverged keeps its own commits, unless
		// they are history the agent's own rebase replaced.
		if err := sg.FastForward(ctx, "origin/"+branch); err != nil {
			return x.adoptRebase(ctx, r, sg, ws, branch, err)
		}
	}
	return nil
}

// rebasedRef remembers the head a rebase by the agent replaced on the
// forge, so that Prepare can tell a session checkout left on that old
// history from one with new commits of its own.
func rebasedRef(branch string) string { return "refs/disinto/rebased/" + branch }

// adoptRebase moves a session checkout that did not fast-forward to the
// forge's branch onto it when everything the checkout has on branch is
// history the agent's rebase replaced: a later session must build on the
// rebased head, or its push would bring the old history back. A checkout
// with commits of its own is kept as it is (ffErr is only logged).
func (x *Git) adoptRebase(ctx context.Context, r *git.Repo, sg *git.Repo, ws *sandbox.Workspace, branch string, ffErr error) error {
	keep := func(why string) error {
		x.o.Log.Debug().Str("error", ffErr.Error()).Str("why", why).Msg("session checkout not fast-forwarded")
		return nil
	}
	replaced, err := r.RefSHA(ctx, rebasedRef(branch))
	if err != nil || replaced == "" {
		return err
	}
	head, err := x.importSession(ctx, r, ws, branch)
	if errors.Is(err, git.ErrNotFound) {
		return keep("no such branch in the checkout")
	}
	if err != nil {
		return err
	}
	if ok, err := r.IsAncestor(ctx, head, replaced); err != nil || !ok {
		if err != nil {
			return err
		}
		return keep("the checkout has commits of its own")
	}
	if err := sg.ResetBranch(ctx, branch, "origin/"+branch); err != nil {
		return keep(err.Error())
	}
	x.o.Log.Debug().Str("branch", branch).Msg("session checkout moved to the rebased head")
	return nil
}

// importSession reads branch of ws's checkout back into sessionRef: the
// session's own user writes a bundle of it, which the agent checks and
// fetches; a checkout that would lead git beyond itself is refused with a
// *git.UnsafeCheckoutError, and a missing branch is git.ErrNotFound.
func (x *Git) importSession(ctx context.Context, r *git.Repo, ws *sandbox.Workspace, branch string) (string, error) {
	if err := r.DeleteRef(ctx, sessionRef(branch)); err != nil {
		return "", err
	}
	return r.ImportUntrusted(ctx, git.Import{As: x.sessionGit(ws), Checkout: ws.Repo(), Branch: branch, Into: sessionRef(branch),
		Bundle: ws.Out("branch.bundle"), Have: []string{"refs/remotes/origin/" + x.o.Primary, "refs/remotes/origin/" + branch}})
}

// sessionGit runs git as the session of ws, without any credential.
func (x *Git) sessionGit(ws *sandbox.Workspace) *git.Git {
	var as *git.User
	if c := ws.Credential(); c != nil {
		as = &git.User{UID: c.Uid, GID: c.Gid}
	}
	env := make([]string, 0, 2)
	for k, v := range ws.Env() {
		if k == "HOME" || k == "TMPDIR" {
			env = append(env, k+"="+v)
		}
	}
	return git.New(git.Options{RunAs: as, Env: env, Redactor: x.o.Redactor, Log: x.o.Log})
}

// Collect implements gitOps.
func (x *Git) Collect(ctx context.Context, ws *sandbox.Workspace, branch string) (string, int, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", 0, err
	}
	if err := ws.Reap(); err != nil {
		return "", 0, err
	}
	head, err := x.importSession(ctx, r, ws, branch)
	if errors.Is(err, git.ErrNotFound) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	if err := r.Fetch(ctx, x.o.Primary); err != nil {
		return "", 0, err
	}
	ahead, err := r.CountBetween(ctx, "origin/"+x.o.Primary, head)
	return head, ahead, err
}

// Push implements gitOps.
func (x *Git) Push(ctx context.Context, sha, branch string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	return r.Push(ctx, r.Dir(), branch, git.PushOptions{ForceWithLease: true, Source: sha})
}

// Rebase implements gitOps. The rebase runs in the agent's clone, with the
// bot as committer; the replaced head is remembered for Prepare.
func (x *Git) Rebase(ctx context.Context, branch string) (string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", err
	}
	if err := r.Fetch(ctx, x.o.Primary, branch); err != nil {
		return "", err
	}
	old, err := r.RefSHA(ctx, "refs/remotes/origin/"+branch)
	if err != nil {
		return "", err
	}
	if old == "" {
		return "", fmt.Errorf("rebase %s: %w", branch, git.ErrNotFound)
	}
	head, err := r.RebaseOnto(ctx, old, "refs/remotes/origin/"+x.o.Primary)
	if err != nil || head == old {
		return head, err
	}
	if err := r.UpdateRef(ctx, rebasedRef(branch), old); err != nil {
		return "", err
	}
	if err := r.Push(ctx, r.Dir(), branch, git.PushOptions{ForceWithLease: true, Expect: old, Source: head}); err != nil {
		return "", err
	}
	return head, nil
}

// RemoteBranches implements gitOps.
func (x *Git) RemoteBranches(ctx context.Context, prefix string) (map[string]string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return nil, err
	}
	return r.RemoteBranches(ctx, prefix)
}

// EmptyCommit implements gitOps.
func (x *Git) EmptyCommit(ctx context.Context, branch, msg string) (string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", err
	}
	if err := r.Fetch(ctx, branch); err != nil {
		return "", err
	}
	sha, err := r.CommitOnto(ctx, "refs/remotes/origin/"+branch, msg)
	if err != nil {
		return "", err
	}
	return sha, r.Push(ctx, r.Dir(), branch, git.PushOptions{Source: sha})
}

// Changes implements gitOps.
func (x *Git) Changes(ctx context.Context, base, head string) (string, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return "", err
	}
	if base != "" {
		return r.ReviewDiff(ctx, base, head)
	}
	if err := r.Fetch(ctx, x.o.Primary); err != nil {
		return "", err
	}
	return r.ReviewDiff(ctx, "refs/remotes/origin/"+x.o.Primary+"..."+head)
}

// heldRef is where commits waiting for a maintainer's approval are kept
// on the forge: outside refs/heads, so no CI runs them.
func heldRef(branch string) string { return "refs/disinto/held/" + branch }

// Hold implements gitOps. Only the agent writes its held refs, so the
// push replaces whatever an earlier hold left.
func (x *Git) Hold(ctx context.Context, sha, branch string) error {
	r, err := x.repo(ctx)
	if err != nil {
		return err
	}
	return r.Push(ctx, r.Dir(), branch, git.PushOptions{Ref: heldRef(branch), Source: sha, Force: true})
}

// PrimaryFS implements gitOps.
func (x *Git) PrimaryFS(ctx context.Context) (fs.FS, error) {
	r, err := x.repo(ctx)
	if err != nil {
		return nil, err
	}
	return r.RevFS(ctx, "refs/remotes/origin/"+x.o.Primary), nil
}
