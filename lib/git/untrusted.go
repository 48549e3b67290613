package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A checkout a session works in is untrusted: whatever runs there may have
// rewritten its configuration and hooks, so the daemon never runs git
// inside it. It makes the checkout itself (Seed), hands it fresh refs in a
// bundle (Bundle, then FetchBundle as the session's user), and takes the
// session's commits back in a bundle the session's user writes
// (ImportUntrusted, in import.go).

// SeedOptions describes a checkout made for a session.
type SeedOptions struct {
	// Branch is checked out, from origin/<Branch> when the clone has it,
	// else from Start; empty with Detach set.
	Branch string
	// Start is where a new Branch starts (e.g. "origin/main").
	Start string
	// Detach checks out this commit detached instead of a branch.
	Detach string
	// RemoteURL becomes the checkout's origin (credential-free).
	RemoteURL string
	// Name and Email are the checkout's commit identity.
	Name, Email string
}

// Seed makes a standalone copy of the clone at dst, which must not exist:
// the objects are copied (never hard-linked, so the copy's owner can
// change without touching the clone), the clone's remote-tracking
// branches become the copy's, origin points at o.RemoteURL, and o.Branch
// or o.Detach is checked out. It runs before anyone else can write dst,
// and builds the copy beside it first, so an interrupted seed leaves no
// half-made checkout at dst.
func (r *Repo) Seed(ctx context.Context, dst string, o SeedOptions) error {
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("seed %s: already exists", dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("seed %s: %w", dst, err)
	}
	tmp := dst + ".seed-tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("seed %s: %w", dst, err)
	}
	fail := func(err error) error {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("seed %s: %w", dst, err)
	}
	unlock := r.g.lock(r.dir)
	_, err := r.g.exec(ctx, call{dir: r.dir, noCfg: true, args: []string{"clone", "--quiet", "--no-hardlinks", "--no-checkout", "--origin", Remote, "--", r.dir, tmp}})
	if err == nil {
		_, err = r.g.exec(ctx, call{dir: tmp, noCfg: true, args: []string{"fetch", "--quiet", "--no-tags", r.dir, "+refs/remotes/" + Remote + "/*:refs/remotes/" + Remote + "/*"}})
	}
	unlock()
	if err != nil {
		return fail(err)
	}
	steps := [][]string{
		{"remote", "set-url", Remote, StripCredentials(o.RemoteURL)},
		{"config", "user.name", o.Name},
		{"config", "user.email", o.Email},
	}
	switch {
	case o.Detach != "":
		steps = append(steps, []string{"checkout", "--quiet", "--detach", o.Detach})
	case o.Branch != "":
		start := o.Start
		if _, err := r.g.run(ctx, tmp, "rev-parse", "--verify", "--quiet", "refs/remotes/"+Remote+"/"+o.Branch); err == nil {
			start = Remote + "/" + o.Branch
		}
		steps = append(steps, []string{"checkout", "--quiet", "--no-track", "-B", o.Branch, start})
	}
	for _, args := range steps {
		if _, err := r.g.run(ctx, tmp, args...); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fail(err)
	}
	return nil
}

// Bundle writes the clone's refs to a bundle file at path, readable by
// every user (it holds nothing the session may not see).
func (r *Repo) Bundle(ctx context.Context, path string, refs ...string) error {
	_ = os.Remove(path)
	args := append([]string{"bundle", "create", "--quiet", path}, refs...)
	if _, err := r.g.run(ctx, r.dir, args...); err != nil {
		return fmt.Errorf("bundle %s: %w", strings.Join(refs, " "), err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}

// FetchBundle fetches refspecs from the bundle at path into the checkout.
func (r *Repo) FetchBundle(ctx context.Context, path string, refspecs ...string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--force", path}, refspecs...)
	if _, err := r.g.exec(ctx, call{dir: r.dir, noCfg: true, args: args}); err != nil {
		return fmt.Errorf("fetch bundle into %s: %w", r.dir, err)
	}
	return nil
}

// RefSHA returns the commit ref points at in the clone, "" when it does
// not exist.
func (r *Repo) RefSHA(ctx context.Context, ref string) (string, error) {
	sha, err := r.revParse(ctx, r.dir, ref)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return sha, err
}

// CountBetween counts the commits reachable from head but not from base.
func (r *Repo) CountBetween(ctx context.Context, base, head string) (int, error) {
	out, err := r.g.run(ctx, r.dir, "rev-list", "--count", base+".."+head)
	if err != nil {
		return 0, fmt.Errorf("commits of %s since %s: %w", head, base, err)
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "%d", &n); err != nil {
		return 0, fmt.Errorf("commits of %s since %s: %w", head, base, err)
	}
	return n, nil
}

// DeleteRef deletes ref from the clone; a missing ref is not an error.
func (r *Repo) DeleteRef(ctx context.Context, ref string) error {
	defer r.g.lock(r.dir)()
	if _, err := r.g.run(ctx, r.dir, "update-ref", "-d", ref); err != nil {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	return nil
}

// CommitOnto makes a commit with parent's tree and parent as its only
// parent (a commit that changes nothing) and returns its SHA; no worktree
// is involved.
func (r *Repo) CommitOnto(ctx context.Context, parent, message string) (string, error) {
	out, err := r.g.run(ctx, r.dir, "commit-tree", "-p", parent, "-m", message, parent+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("commit onto %s: %w", parent, err)
	}
	return strings.TrimSpace(out), nil
}

// ShowFile returns the content of path at rev; fs.ErrNotExist when rev
// has no such file.
func (r *Repo) ShowFile(ctx context.Context, rev, path string) ([]byte, error) {
	out, err := r.g.run(ctx, r.dir, "cat-file", "blob", rev+":"+path)
	if err != nil {
		if _, terr := r.g.run(ctx, r.dir, "cat-file", "-e", rev+":"+path); terr != nil {
			return nil, fmt.Errorf("%s at %s: %w", path, rev, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("%s at %s: %w", path, rev, err)
	}
	return []byte(out), nil
}

// FastForward moves the checked-out branch of the clone to rev when that
// is a fast-forward.
func (r *Repo) FastForward(ctx context.Context, rev string) error {
	if _, err := r.g.exec(ctx, call{dir: r.dir, noCfg: true, args: []string{"merge", "--ff-only", "--quiet", rev}}); err != nil {
		return fmt.Errorf("fast-forward to %s: %w", rev, err)
	}
	return nil
}

// DeleteRefs deletes every ref of the clone under prefix (which ends in
// "/").
func (r *Repo) DeleteRefs(ctx context.Context, prefix string) error {
	defer r.g.lock(r.dir)()
	out, err := r.g.run(ctx, r.dir, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	for _, ref := range strings.Fields(out) {
		if _, err := r.g.run(ctx, r.dir, "update-ref", "-d", ref); err != nil {
			return fmt.Errorf("delete %s: %w", ref, err)
		}
	}
	return nil
}
