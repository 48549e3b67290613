package git

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultBranch returns the branch HEAD of the repository at remote (a URL
// or a path) points at, asking the remote itself (ls-remote --symref). A
// HEAD that is not a branch wraps ErrDetached.
func (g *Git) DefaultBranch(ctx context.Context, remote string) (string, error) {
	out, err := g.run(ctx, "", "ls-remote", "--symref", remote, "HEAD")
	if err != nil {
		return "", fmt.Errorf("default branch of %s: %w", g.redact(remote), err)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "ref: refs/heads/"); ok {
			if b, _, ok := strings.Cut(rest, "\t"); ok {
				return b, nil
			}
		}
	}
	return "", fmt.Errorf("default branch of %s: HEAD is not a branch: %w", g.redact(remote), ErrDetached)
}

// CloneBare makes dir (which must not exist) a bare copy of every branch
// and tag of src, a URL or a path, and returns it.
func (g *Git) CloneBare(ctx context.Context, src, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", g.redact(src), err)
	}
	if _, err := g.run(ctx, "", "clone", "--bare", "--quiet", src, abs); err != nil {
		return nil, fmt.Errorf("clone %s: %w", g.redact(src), err)
	}
	return g.Open(abs), nil
}

// PushAll pushes every branch and tag of the clone to the repository at
// remoteURL, authenticated by the Git's Credentials (which reach only
// their own forge, as for origin).
func (r *Repo) PushAll(ctx context.Context, remoteURL string) error {
	clean := StripCredentials(remoteURL)
	if _, err := r.g.run(ctx, r.dir, "push", "--quiet", clean, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"); err != nil {
		return fmt.Errorf("push to %s: %w", clean, err)
	}
	return nil
}
