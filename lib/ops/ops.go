// Package ops is the managed checkout of a project's ops repository: the
// vault's actions, sprints, knowledge, predictions, journals and the
// gardener's manifest live there, and every role reads and writes them
// through this package.
//
// Writes never lose an update. A commit is made without a working tree,
// on top of the primary branch as just fetched, and pushed as a fast
// forward; when another writer got there first the change is made again
// on the new head, a bounded number of times. Changes are given as a
// function of the current files, so an append appends to what is there
// now, not to what was there when the writer started.
//
// Identity and credentials are the calling role's bot's, handed to git as
// lib/git does: never in argv or in .git/config.
package ops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/wait"
)

// Layout is the top of the ops repository (spec 00 §3): the directories
// every role expects, made on first use.
var Layout = []string{"vault", "sprints", "knowledge", "predictions", "journal", "gardener"}

// ErrProtected means the primary branch takes no direct commits (the
// vault protection of an ops repository): the change needs a pull
// request.
var ErrProtected = errors.New("the ops primary branch is protected")

// DefaultAttempts bounds how often a commit is made again after losing a
// race to another writer.
const DefaultAttempts = 8

// Options configures a Repo.
type Options struct {
	// Git carries the calling role's credentials.
	Git *git.Git
	// URL is the ops repository's clone URL, without credentials.
	URL string
	// Dir is the checkout, under the data dir.
	Dir string
	// Branch is the ops repository's primary branch; default "main".
	Branch string
	// Name and Email are the commit identity.
	Name, Email string
	// Attempts bounds the retries of a commit that lost a race; default
	// DefaultAttempts.
	Attempts int
	// Log receives one line per commit.
	Log zerolog.Logger
}

// Repo is one managed checkout. It is safe for concurrent use; writers in
// other processes (another daemon) are handled by the retry.
type Repo struct {
	o  Options
	mu sync.Mutex
	r  *git.Repo
}

// Open returns the checkout described by o; nothing is cloned until the
// first call that needs it.
func Open(o Options) *Repo {
	if o.Branch == "" {
		o.Branch = "main"
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	return &Repo{o: o}
}

// ref is the remote-tracking ref of the primary branch.
func (r *Repo) ref() string { return "refs/remotes/" + git.Remote + "/" + r.o.Branch }

// sync clones on first use and fetches the primary branch; call with mu.
func (r *Repo) sync(ctx context.Context) (*git.Repo, error) {
	if r.r == nil {
		repo, err := r.o.Git.EnsureClone(ctx, r.o.URL, r.o.Dir, "")
		if err != nil {
			return nil, fmt.Errorf("ops checkout: %w", err)
		}
		if err := repo.ConfigureIdentity(ctx, r.o.Name, r.o.Email); err != nil {
			return nil, fmt.Errorf("ops checkout: %w", err)
		}
		r.r = repo
		return repo, nil
	}
	if err := r.r.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("ops checkout: %w", err)
	}
	return r.r, nil
}

// Sync fetches the primary branch and returns its head.
func (r *Repo) Sync(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, err := r.sync(ctx)
	if err != nil {
		return "", err
	}
	return repo.RefSHA(ctx, r.ref())
}

// Files is the ops repository's content at one commit.
type Files struct {
	ctx context.Context
	r   *git.Repo
	rev string
}

// Read returns the file at path; fs.ErrNotExist when there is none.
func (f Files) Read(path string) ([]byte, error) { return f.r.ShowFile(f.ctx, f.rev, path) }

// Has reports whether path (a file or a directory) exists.
func (f Files) Has(path string) (bool, error) { return f.r.PathExists(f.ctx, f.rev, path) }

// List returns the files directly in dir.
func (f Files) List(dir string) ([]git.TreeFile, error) { return f.r.ListFiles(f.ctx, f.rev, dir) }

// FS returns the files as a read-only file system of regular files.
func (f Files) FS() fs.FS { return f.r.RevFS(f.ctx, f.rev) }

// Local returns the primary branch as last fetched, without asking the
// forge, and its head; head is "" before the first sync or while the
// repository is empty.
func (r *Repo) Local(ctx context.Context) (Files, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r == nil {
		return Files{}, "", nil
	}
	head, err := r.r.RefSHA(ctx, r.ref())
	if err != nil || head == "" {
		return Files{}, "", err
	}
	return Files{ctx: ctx, r: r.r, rev: head}, head, nil
}

// Read returns a file of the primary branch as the forge has it now.
func (r *Repo) Read(ctx context.Context, path string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, err := r.sync(ctx)
	if err != nil {
		return nil, err
	}
	return Files{ctx: ctx, r: repo, rev: r.ref()}.Read(path)
}

// Edit computes the changes of one commit from the current files.
// Returning no changes commits nothing.
type Edit func(Files) ([]git.FileChange, error)

// Commit commits the changes edit computes directly to the primary
// branch and returns the new head ("" when edit changed nothing). A push
// that loses a race is made again from the new head, at most Attempts
// times; edit runs again each time.
func (r *Repo) Commit(ctx context.Context, message string, edit Edit) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last error
	for attempt := 1; attempt <= r.o.Attempts; attempt++ {
		repo, err := r.sync(ctx)
		if err != nil {
			return "", err
		}
		if attempt > 1 {
			// The first clone fetched already; a retry needs the winner's head.
			if err := repo.Fetch(ctx); err != nil {
				return "", fmt.Errorf("ops checkout: %w", err)
			}
		}
		changes, err := edit(Files{ctx: ctx, r: repo, rev: r.ref()})
		if err != nil {
			return "", err
		}
		if len(changes) == 0 {
			return "", nil
		}
		head, err := repo.RefSHA(ctx, r.ref())
		if err != nil {
			return "", err
		}
		parent := r.ref()
		if head == "" {
			parent = "" // an empty repository: the first commit
		}
		sha, err := repo.CommitFiles(ctx, parent, message, changes)
		if err != nil {
			return "", err
		}
		if sha == head {
			return "", nil
		}
		err = repo.Push(ctx, repo.Dir(), r.o.Branch, git.PushOptions{Source: sha})
		if err == nil {
			r.o.Log.Debug().Str("sha", sha).Int("attempt", attempt).Msg("ops commit pushed")
			// The next reader sees this commit without fetching again.
			_ = repo.UpdateRef(ctx, r.ref(), sha)
			return sha, nil
		}
		if errors.Is(err, git.ErrProtected) {
			return "", fmt.Errorf("ops commit %q: %w", message, ErrProtected)
		}
		if !errors.Is(err, git.ErrRejected) {
			return "", fmt.Errorf("ops commit: %w", err)
		}
		last = err
		if err := wait.For(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("ops commit %q: lost the race %d times: %w", message, r.o.Attempts, last)
}

// EnsureLayout creates the directories of Layout that the primary branch
// lacks, in one commit (each holds a .gitkeep).
func (r *Repo) EnsureLayout(ctx context.Context) (string, error) {
	return r.Commit(ctx, "ops: create the repository layout", func(f Files) ([]git.FileChange, error) {
		var out []git.FileChange
		for _, d := range Layout {
			if ok, err := f.Has(d); err != nil {
				return nil, err
			} else if !ok {
				out = append(out, git.FileChange{Path: d + "/.gitkeep"})
			}
		}
		return out, nil
	})
}
