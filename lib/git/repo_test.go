package git_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
)

func TestEnsureCloneIdempotentAndFixesURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := newGit(nil)
	dir := filepath.Join(t.TempDir(), "nested", "clone")
	repo, err := g.EnsureClone(t.Context(), f.url, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + ".clone-tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary clone directory left behind: %v", err)
	}
	// A legacy clone whose origin embeds credentials is rewritten.
	sh(t, dir, nil, "remote", "set-url", "origin", "https://dev-bot:hunter2hunter2@forge.invalid/o/r.git")
	sh(t, dir, nil, "config", "remote.origin.pushurl", "https://dev-bot:hunter2hunter2@forge.invalid/o/r.git")
	upstream := f.pushMain(t, "b.txt", "b\n")
	if _, err := g.EnsureClone(t.Context(), f.url, dir, "main"); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "hunter2") || !strings.Contains(string(cfg), f.url) {
		t.Errorf("origin not rewritten:\n%s", cfg)
	}
	// The second call fetched.
	if got := sh(t, dir, nil, "rev-parse", "origin/main"); got != upstream {
		t.Errorf("origin/main = %s, want %s", got, upstream)
	}
	if got, _ := repo.CurrentBranch(t.Context(), dir); got != "main" {
		t.Errorf("clone is on %q, want main", got)
	}
}

func TestEnsureCloneRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "precious.txt"), "keep me")
	_, err := newGit(nil).EnsureClone(t.Context(), f.url, dir, "main")
	if !errors.Is(err, git.ErrNotClone) {
		t.Fatalf("EnsureClone into a non-empty directory = %v, want ErrNotClone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Errorf("existing file touched: %v", err)
	}
}

func TestEnsureCloneBadURL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "clone")
	_, err := newGit(nil).EnsureClone(t.Context(), "file:///nonexistent/repo.git", dir, "main")
	var gerr *git.Error
	if !errors.As(err, &gerr) || gerr.Args[0] != "clone" || gerr.Stderr == "" {
		t.Fatalf("EnsureClone(bad URL) = %v, want a *git.Error for clone with stderr", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed clone left %s behind", dir)
	}
}

func TestWorkOnABranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := newGit(nil)
	repo := cloneFixture(t, g, f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt-7")

	created, err := repo.AddWorktree(ctx, wt, "fix/issue-7", "origin/main")
	if err != nil || !created {
		t.Fatalf("AddWorktree = %v, %v", created, err)
	}
	if b, err := repo.CurrentBranch(ctx, wt); err != nil || b != "fix/issue-7" {
		t.Fatalf("CurrentBranch = %q, %v", b, err)
	}
	if dirty, err := repo.HasUncommittedChanges(ctx, wt); err != nil || dirty {
		t.Fatalf("fresh worktree dirty = %v, %v", dirty, err)
	}
	writeFile(t, filepath.Join(wt, "new.txt"), "x\n")
	if dirty, err := repo.HasUncommittedChanges(ctx, wt); err != nil || !dirty {
		t.Fatalf("untracked file not seen: %v, %v", dirty, err)
	}
	commitIn(t, wt, "new.txt", "x\n")
	if n, err := repo.CommitsAhead(ctx, wt, "origin/main"); err != nil || n != 1 {
		t.Fatalf("CommitsAhead = %d, %v; want 1", n, err)
	}
	diff, err := repo.Diff(ctx, wt, "origin/main", "HEAD")
	if err != nil || !strings.Contains(diff, "+x") || !strings.Contains(diff, "new.txt") {
		t.Fatalf("Diff = %q, %v", diff, err)
	}
	if got := sh(t, wt, nil, "log", "-1", "--format=%an <%ae>"); got != "dev-bot <dev-bot@disinto.local>" {
		t.Errorf("commit identity = %q", got)
	}

	if _, err := repo.RemoteSHA(ctx, "fix/issue-7"); !errors.Is(err, git.ErrNotFound) {
		t.Fatalf("RemoteSHA before push = %v, want ErrNotFound", err)
	}
	if err := repo.Push(ctx, wt, "fix/issue-7", git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	head, err := repo.HeadSHA(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if remote, err := repo.RemoteSHA(ctx, "fix/issue-7"); err != nil || remote != head {
		t.Fatalf("RemoteSHA = %q, %v; want %s", remote, err, head)
	}
	heads, err := repo.RemoteBranches(ctx, "fix/issue-7")
	if err != nil || len(heads) != 1 {
		t.Fatalf("RemoteBranches = %v, %v", heads, err)
	}
	// The empty commit that retriggers CI.
	if err := repo.Commit(ctx, wt, "ci: retrigger", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := repo.CommitsAhead(ctx, wt, "origin/main"); n != 2 {
		t.Errorf("CommitsAhead after empty commit = %d, want 2", n)
	}
}

func TestAddWorktreeAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := newGit(nil)
	repo := cloneFixture(t, g, f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "work.txt", "w\n")
	writeFile(t, filepath.Join(wt, "unsaved.txt"), "u\n")
	head, _ := repo.HeadSHA(ctx, wt)

	// Same call again: the worktree, its commits and edits are reused.
	created, err := repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main")
	if err != nil || created {
		t.Fatalf("second AddWorktree = %v, %v; want reuse", created, err)
	}
	if _, err := os.Stat(filepath.Join(wt, "unsaved.txt")); err != nil {
		t.Errorf("uncommitted work lost: %v", err)
	}

	// The directory vanished (a wiped /tmp): the stale record is pruned and
	// the local branch, with its commit, checked out again.
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	created, err = repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main")
	if err != nil || !created {
		t.Fatalf("AddWorktree after wipe = %v, %v", created, err)
	}
	if got, _ := repo.HeadSHA(ctx, wt); got != head {
		t.Errorf("HEAD = %s, want the branch's commit %s", got, head)
	}

	// Another container pushed the branch; this clone has never seen it
	// locally: it starts from origin's copy, not from startRef.
	if err := repo.Push(ctx, wt, "fix/issue-1", git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	other := cloneFixture(t, newGit(nil), f)
	wt2 := filepath.Join(t.TempDir(), "wt2")
	if _, err := other.AddWorktree(ctx, wt2, "fix/issue-1", "origin/main"); err != nil {
		t.Fatal(err)
	}
	if got, _ := other.HeadSHA(ctx, wt2); got != head {
		t.Errorf("HEAD in second clone = %s, want pushed %s", got, head)
	}
}

func TestAddWorktreeRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main"); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-2", "origin/main"); !errors.Is(err, git.ErrWorktreeBusy) {
		t.Errorf("AddWorktree on a busy path = %v, want ErrWorktreeBusy", err)
	}
	foreign := t.TempDir()
	writeFile(t, filepath.Join(foreign, "precious"), "p")
	if _, err := repo.AddWorktree(ctx, foreign, "fix/issue-3", "origin/main"); !errors.Is(err, git.ErrNotClone) {
		t.Errorf("AddWorktree on a foreign directory = %v, want ErrNotClone", err)
	}
	if err := repo.RemoveWorktree(ctx, foreign); !errors.Is(err, git.ErrNotClone) {
		t.Errorf("RemoveWorktree on a foreign directory = %v, want ErrNotClone", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "precious")); err != nil {
		t.Errorf("foreign directory touched: %v", err)
	}
	if _, err := repo.AddWorktree(ctx, filepath.Join(t.TempDir(), "x"), "fix/issue-4", "origin/nope"); err == nil {
		t.Error("AddWorktree from a missing start ref succeeded")
	}
}

func TestRemoveWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "dirty.txt"), "d")
	if err := repo.RemoveWorktree(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory still there: %v", err)
	}
	list, err := repo.Worktrees(ctx)
	if err != nil || len(list) != 1 {
		t.Errorf("Worktrees after remove = %+v, %v; want only the clone", list, err)
	}
	// Removing again, or a path never used, is fine.
	if err := repo.RemoveWorktree(ctx, wt); err != nil {
		t.Errorf("second RemoveWorktree = %v", err)
	}
	// The branch survives for a later attempt.
	sh(t, repo.Dir(), nil, "rev-parse", "--verify", "refs/heads/fix/issue-1")
}

func TestDetachedWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	first, _ := repo.HeadSHA(ctx, repo.Dir())
	second := f.pushMain(t, "two.txt", "2\n")
	if err := repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "review-3")
	if err := repo.AddDetachedWorktree(ctx, wt, first); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CurrentBranch(ctx, wt); !errors.Is(err, git.ErrDetached) {
		t.Errorf("CurrentBranch of a detached worktree = %v, want ErrDetached", err)
	}
	// Re-review at a new head reuses the worktree, discarding edits.
	writeFile(t, filepath.Join(wt, "README.md"), "scribbled")
	if err := repo.AddDetachedWorktree(ctx, wt, second); err != nil {
		t.Fatal(err)
	}
	if got, _ := repo.HeadSHA(ctx, wt); got != second {
		t.Errorf("HEAD = %s, want %s", got, second)
	}
	if dirty, _ := repo.HasUncommittedChanges(ctx, wt); dirty {
		t.Error("tracked edits survived the move to the new head")
	}
}

func TestRebaseAndForcePush(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-5", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "mine.txt", "mine\n")
	if err := repo.Push(ctx, wt, "fix/issue-5", git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	pushed, _ := repo.HeadSHA(ctx, wt)
	upstream := f.pushMain(t, "theirs.txt", "theirs\n")
	if err := repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repo.Rebase(ctx, wt, "origin/main"); err != nil {
		t.Fatal(err)
	}
	if base := sh(t, wt, nil, "rev-parse", "HEAD~1"); base != upstream {
		t.Errorf("rebased onto %s, want %s", base, upstream)
	}
	// The rewritten branch is not a fast-forward of the pushed one.
	if err := repo.Push(ctx, wt, "fix/issue-5", git.PushOptions{}); !errors.Is(err, git.ErrRejected) {
		t.Fatalf("plain push after rebase = %v, want ErrRejected", err)
	}
	// A lease on a commit the remote is not at fails.
	lease := git.PushOptions{ForceWithLease: true, Expect: upstream}
	if err := repo.Push(ctx, wt, "fix/issue-5", lease); !errors.Is(err, git.ErrRejected) {
		t.Fatalf("push with a broken lease = %v, want ErrRejected", err)
	}
	lease.Expect = pushed
	if err := repo.Push(ctx, wt, "fix/issue-5", lease); err != nil {
		t.Fatal(err)
	}
	// Without Expect, the remote-tracking ref (updated by the last push) is
	// the lease.
	commitIn(t, wt, "more.txt", "more\n")
	sh(t, wt, nil, "commit", "--quiet", "--amend", "-m", "amended")
	if err := repo.Push(ctx, wt, "fix/issue-5", git.PushOptions{ForceWithLease: true}); err != nil {
		t.Fatal(err)
	}
	head, _ := repo.HeadSHA(ctx, wt)
	if remote, _ := repo.RemoteSHA(ctx, "fix/issue-5"); remote != head {
		t.Errorf("remote = %s, want %s", remote, head)
	}
}

func TestRebaseConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-6", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "README.md", "mine\n")
	before, _ := repo.HeadSHA(ctx, wt)
	f.pushMain(t, "README.md", "theirs\n")
	if err := repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	err := repo.Rebase(ctx, wt, "origin/main")
	var ce *git.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, git.ErrConflict) {
		t.Fatalf("Rebase = %v, want a ConflictError", err)
	}
	if len(ce.Files) != 1 || ce.Files[0] != "README.md" {
		t.Errorf("conflicted files = %v, want [README.md]", ce.Files)
	}
	if after, _ := repo.HeadSHA(ctx, wt); after != before {
		t.Errorf("HEAD after aborted rebase = %s, want %s", after, before)
	}
	if b, err := repo.CurrentBranch(ctx, wt); err != nil || b != "fix/issue-6" {
		t.Errorf("branch after aborted rebase = %q, %v", b, err)
	}

	// A rebase left half-done by a crash is aborted before the next one.
	if out, err := runAllowFail(wt, "rebase", "origin/main"); err == nil {
		t.Fatalf("conflicting rebase succeeded: %s", out)
	}
	if err := repo.Rebase(ctx, wt, "origin/main"); !errors.Is(err, git.ErrConflict) {
		t.Fatalf("Rebase over a stale rebase = %v, want ErrConflict", err)
	}
}

func TestPushMirror(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	sh(t, t.TempDir(), nil, "init", "--quiet", "--bare", mirror)
	sha, _ := repo.HeadSHA(ctx, repo.Dir())
	if err := repo.PushMirror(ctx, "file://"+mirror, sha+":refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, mirror, nil, "rev-parse", "refs/heads/main"); got != sha {
		t.Errorf("mirror main = %s, want %s", got, sha)
	}
	if err := repo.PushMirror(ctx, "file://"+mirror); err == nil {
		t.Error("PushMirror without refspecs succeeded")
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := repo.Fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestPlantedHooksDoNotRun: the model controls the worktree and could leave
// a hook in the clone; the daemon's own git commands must not run it.
func TestPlantedHooksDoNotRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-8", "origin/main"); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(repo.Dir(), ".git", "hooks", "pre-push")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "a.txt", "a\n")
	if err := repo.Push(ctx, wt, "fix/issue-8", git.PushOptions{}); err != nil {
		t.Fatalf("push blocked by a planted hook: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Error("planted pre-push hook ran")
	}
}

// TestConcurrentWorktrees: agents working on several issues share one clone;
// their worktree and fetch calls must not trip over git's lock files.
func TestConcurrentWorktrees(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := newGit(nil)
	repo := cloneFixture(t, g, f)
	ctx := t.Context()
	root := t.TempDir()
	errs := make(chan error, 12)
	for i := range 6 {
		go func() {
			wt := filepath.Join(root, "wt", strconv.Itoa(i))
			if _, err := g.Open(repo.Dir()).AddWorktree(ctx, wt, "fix/issue-"+strconv.Itoa(i), "origin/main"); err != nil {
				errs <- err
				return
			}
			errs <- repo.RemoveWorktree(ctx, wt)
		}()
		go func() { errs <- repo.Fetch(ctx) }()
	}
	for range 12 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A clone reports git's progress to the log (a large first clone says
// how far it got; here every line is reported, however short the clone).
func TestCloneLogsProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var logs bytes.Buffer
	g := git.New(git.Options{Env: isolatedEnv, Log: zerolog.New(&logs)})
	g.ReportAllProgress()
	if _, err := g.EnsureClone(t.Context(), f.url, filepath.Join(t.TempDir(), "c"), "main"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"message":"cloning"`) || !strings.Contains(logs.String(), `"progress":"`) {
		t.Errorf("no progress logged by the clone:\n%s", logs.String())
	}
}
