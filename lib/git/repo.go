package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Remote is the name of the forge remote in every clone.
const Remote = "origin"

// Repo is a clone on disk whose origin is the forge. Methods that act on a
// worktree take its directory; the clone's own checkout is not used for work.
type Repo struct {
	g   *Git
	dir string
}

// Open returns the clone at dir (made absolute) without checking it.
func (g *Git) Open(dir string) *Repo {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Repo{g: g, dir: dir}
}

// Dir returns the clone's directory.
func (r *Repo) Dir() string { return r.dir }

// EnsureClone makes dir a clone of rawURL and returns it. It is idempotent:
// an existing clone is kept, its origin is pointed at rawURL (rewriting a
// legacy URL with embedded credentials) and fetched. Credentials embedded
// in rawURL are dropped; they must come from Options.Credentials. A new
// clone is made in a sibling temporary directory and renamed into place, so
// an interrupted clone never leaves a half-made dir behind. branch, when not
// empty, is checked out in the clone. A dir that exists, is not empty and is
// not a clone is left alone and reported with ErrNotClone.
func (g *Git) EnsureClone(ctx context.Context, rawURL, dir, branch string) (*Repo, error) {
	clean := StripCredentials(rawURL)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ensure clone %s: %w", dir, err)
	}
	r := g.Open(abs)
	defer g.lock(abs)()
	if _, err := os.Stat(filepath.Join(abs, ".git")); err == nil {
		if err := r.fixRemote(ctx, clean); err != nil {
			return nil, err
		}
		if err := r.fetch(ctx); err != nil {
			return nil, err
		}
		return r, nil
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("ensure clone %s: directory is not empty: %w", abs, ErrNotClone)
	}
	if err := g.clone(ctx, clean, abs, branch); err != nil {
		return nil, err
	}
	return r, nil
}

func (g *Git) clone(ctx context.Context, clean, dir, branch string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	// The temporary name is ours alone, so a leftover from a crash can be
	// removed without guessing.
	tmp := dir + ".clone-tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	args := []string{"clone", "--progress", "--origin", Remote}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	args = append(args, "--", clean, tmp)
	// A large first clone takes minutes: it says how far it got.
	progress := func(line string) {
		g.log.Info().Str("repo", clean).Str("progress", g.redact(line)).Msg("cloning")
	}
	if _, err := g.exec(ctx, call{dir: parent, args: args, progress: progress}); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	return nil
}

// fixRemote points origin (fetch and push) at clean.
func (r *Repo) fixRemote(ctx context.Context, clean string) error {
	if _, err := r.g.run(ctx, r.dir, "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("ensure clone %s: %w: %w", r.dir, ErrNotClone, err)
	}
	cur, err := r.g.run(ctx, r.dir, "config", "--get", "remote."+Remote+".url")
	switch {
	case exitCode(err) == 1: // no origin yet
		if _, err := r.g.run(ctx, r.dir, "remote", "add", Remote, clean); err != nil {
			return fmt.Errorf("ensure clone %s: %w", r.dir, err)
		}
	case err != nil:
		return fmt.Errorf("ensure clone %s: %w", r.dir, err)
	case strings.TrimSpace(cur) != clean:
		r.g.log.Info().Str("from", r.g.redact(strings.TrimSpace(cur))).Str("to", clean).
			Msg("rewriting origin URL")
		if _, err := r.g.run(ctx, r.dir, "remote", "set-url", Remote, clean); err != nil {
			return fmt.Errorf("ensure clone %s: %w", r.dir, err)
		}
	}
	// A separate push URL (which may embed credentials) would bypass the
	// clean URL for pushes.
	if _, err := r.g.run(ctx, r.dir, "config", "--unset-all", "remote."+Remote+".pushurl"); err != nil && exitCode(err) != 5 {
		return fmt.Errorf("ensure clone %s: %w", r.dir, err)
	}
	return nil
}

// Fetch fetches refspecs (all branches when none) from origin, pruning
// remote-tracking refs of deleted branches.
func (r *Repo) Fetch(ctx context.Context, refspecs ...string) error {
	defer r.g.lock(r.dir)()
	return r.fetch(ctx, refspecs...)
}

func (r *Repo) fetch(ctx context.Context, refspecs ...string) error {
	args := append([]string{"fetch", "--prune", "--quiet", Remote}, refspecs...)
	if _, err := r.g.run(ctx, r.dir, args...); err != nil {
		return fmt.Errorf("fetch %s: %w", r.dir, err)
	}
	return nil
}

// ConfigureIdentity sets the commit author and committer for the clone and
// all its worktrees (see Identity for the bots' convention).
func (r *Repo) ConfigureIdentity(ctx context.Context, name, email string) error {
	defer r.g.lock(r.dir)()
	for _, kv := range [][2]string{{"user.name", name}, {"user.email", email}} {
		if _, err := r.g.run(ctx, r.dir, "config", "--local", kv[0], kv[1]); err != nil {
			return fmt.Errorf("configure identity %s: %w", r.dir, err)
		}
	}
	return nil
}

// RemoteSHA returns the commit branch points at on origin, asking the remote
// directly (ls-remote), not the local remote-tracking ref. A branch that does
// not exist returns an error wrapping ErrNotFound.
func (r *Repo) RemoteSHA(ctx context.Context, branch string) (string, error) {
	heads, err := r.RemoteBranches(ctx, branch)
	if err != nil {
		return "", err
	}
	sha, ok := heads[branch]
	if !ok {
		return "", fmt.Errorf("remote branch %s: %w", branch, ErrNotFound)
	}
	return sha, nil
}

// RemoteBranches returns the branches on origin whose names start with
// prefix (all when prefix is empty), mapped to their commits.
func (r *Repo) RemoteBranches(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := r.g.run(ctx, r.dir, "ls-remote", "--heads", Remote)
	if err != nil {
		return nil, fmt.Errorf("list remote branches: %w", err)
	}
	heads := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		sha, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		name, ok := strings.CutPrefix(ref, "refs/heads/")
		if ok && strings.HasPrefix(name, prefix) {
			heads[name] = sha
		}
	}
	return heads, nil
}

// PushOptions tunes Push.
type PushOptions struct {
	// ForceWithLease replaces the remote branch even if it is not an
	// ancestor, but only while it still points where we last saw it: at
	// Expect, or at the remote-tracking ref when Expect is empty.
	ForceWithLease bool
	// Expect is the commit the remote branch must be at for a forced push.
	Expect string
	// Source is what is pushed: a ref or commit of the clone; HEAD of the
	// worktree when empty.
	Source string
	// Force replaces the remote ref wherever it points: only for refs of
	// the pusher's own that nobody else writes.
	Force bool
	// Ref, when set, is the full name of the ref pushed to instead of
	// refs/heads/<branch>: a ref outside refs/heads is no branch, so a
	// forge runs no CI and sends no push event for it.
	Ref string
}

// Push pushes the HEAD of the worktree at dir to branch on origin. A push the
// remote refuses (not a fast-forward, lease broken) wraps ErrRejected.
func (r *Repo) Push(ctx context.Context, dir, branch string, opt PushOptions) error {
	ref := "refs/heads/" + branch
	if opt.Ref != "" {
		ref = opt.Ref
	}
	args := []string{"push", "--porcelain"}
	if opt.ForceWithLease {
		lease := "--force-with-lease=" + ref
		if opt.Expect != "" {
			lease += ":" + opt.Expect
		}
		args = append(args, lease)
	}
	src := opt.Source
	if src == "" {
		src = "HEAD"
	}
	spec := src + ":" + ref
	if opt.Force {
		spec = "+" + spec
	}
	args = append(args, Remote, spec)
	out, err := r.g.run(ctx, dir, args...)
	if err == nil {
		return nil
	}
	// --porcelain reports per-ref status on stdout; "!" marks a rejected ref.
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "!\t") {
			var ge *Error
			if errors.As(err, &ge) && strings.Contains(strings.ToLower(ge.Stderr), "protected branch") {
				return fmt.Errorf("push %s: %w: %w: %w", branch, ErrProtected, ErrRejected, err)
			}
			return fmt.Errorf("push %s: %w: %w", branch, ErrRejected, err)
		}
	}
	return fmt.Errorf("push %s: %w", branch, err)
}

// PushMirror pushes refspecs (such as "<sha>:refs/heads/main") from the
// clone to the repository at remoteURL. Credentials embedded in remoteURL
// are taken out of the URL and handed to git through the credential helper,
// scoped to that URL, instead of the forge's.
func (r *Repo) PushMirror(ctx context.Context, remoteURL string, refspecs ...string) error {
	if len(refspecs) == 0 {
		return fmt.Errorf("push mirror: no refspecs")
	}
	clean, creds := mirrorCredentials(remoteURL)
	c := call{dir: r.dir, args: append([]string{"push", "--porcelain", clean}, refspecs...), creds: creds, noCfg: creds == nil}
	if _, err := r.g.exec(ctx, c); err != nil {
		return fmt.Errorf("push mirror %s: %w", r.g.redact(clean), err)
	}
	return nil
}

// Commit records the staged changes of the worktree at dir; allowEmpty makes
// a commit with no changes (used to retrigger CI). Hooks are skipped: the
// daemon's own commits are bookkeeping, not code.
func (r *Repo) Commit(ctx context.Context, dir, message string, allowEmpty bool) error {
	args := []string{"commit", "--no-verify", "--quiet", "-m", message}
	if allowEmpty {
		args = append(args, "--allow-empty")
	}
	if _, err := r.g.run(ctx, dir, args...); err != nil {
		return fmt.Errorf("commit in %s: %w", dir, err)
	}
	return nil
}

// HeadSHA returns the commit HEAD of the worktree at dir points at.
func (r *Repo) HeadSHA(ctx context.Context, dir string) (string, error) {
	return r.revParse(ctx, dir, "HEAD")
}

func (r *Repo) revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := r.g.run(ctx, dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("resolve %s: %w", rev, ErrNotFound)
		}
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// CurrentBranch returns the branch checked out in the worktree at dir, or an
// error wrapping ErrDetached.
func (r *Repo) CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := r.g.run(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("current branch of %s: %w", dir, ErrDetached)
		}
		return "", fmt.Errorf("current branch of %s: %w", dir, err)
	}
	return strings.TrimSpace(out), nil
}

// CommitsAhead counts the commits reachable from HEAD of the worktree at dir
// but not from base.
func (r *Repo) CommitsAhead(ctx context.Context, dir, base string) (int, error) {
	out, err := r.g.run(ctx, dir, "rev-list", "--count", base+"..HEAD")
	if err != nil {
		return 0, fmt.Errorf("commits ahead of %s: %w", base, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("commits ahead of %s: %w", base, err)
	}
	return n, nil
}

// HasUncommittedChanges reports whether the worktree at dir has staged,
// unstaged or untracked (not ignored) changes.
func (r *Repo) HasUncommittedChanges(ctx context.Context, dir string) (bool, error) {
	out, err := r.g.run(ctx, dir, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", dir, err)
	}
	return strings.TrimSpace(out) != "", nil
}

// Diff returns the patch between base and head in the worktree at dir; with
// head empty, between base and the working tree.
func (r *Repo) Diff(ctx context.Context, dir, base, head string) (string, error) {
	args := []string{"diff", "--no-color", "--no-ext-diff", base}
	if head != "" {
		args = append(args, head)
	}
	args = append(args, "--")
	out, err := r.g.run(ctx, dir, args...)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", dir, err)
	}
	return out, nil
}

// ReviewDiff returns the diff between revisions of the clone (git diff's
// forms: "a b", or "a...b" from their merge base) as a human approving it
// must see it, whatever the repository says: every file as text (an
// attribute cannot show one as binary), no textconv or external diff
// driver, and no rename detection, so a file moved into a directory
// shows its whole content rather than one line saying it moved.
func (r *Repo) ReviewDiff(ctx context.Context, revs ...string) (string, error) {
	args := append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames"}, revs...)
	out, err := r.g.run(ctx, r.dir, append(args, "--")...)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", strings.Join(revs, " "), err)
	}
	return out, nil
}
