package git_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
)

// TestCopyARepository: the default branch of a source is read from the
// source itself, and a bare copy carries every branch and tag to another
// repository.
func TestCopyARepository(t *testing.T) {
	f := newFixture(t)
	sh(t, f.seed, nil, "tag", "v1")
	sh(t, f.seed, nil, "push", "--quiet", "origin", "v1", "main:refs/heads/side")
	g := newGit(nil)
	ctx := t.Context()
	if b, err := g.DefaultBranch(ctx, f.url); err != nil || b != "main" {
		t.Fatalf("DefaultBranch = %q, %v; want main", b, err)
	}
	bare, err := g.CloneBare(ctx, f.bare, filepath.Join(t.TempDir(), "copy.git"))
	if err != nil {
		t.Fatal(err)
	}
	if sha, err := bare.RefSHA(ctx, "refs/heads/side"); err != nil || sha == "" {
		t.Fatalf("bare copy lacks side: %q, %v", sha, err)
	}
	dst := filepath.Join(t.TempDir(), "dst.git")
	sh(t, filepath.Dir(dst), nil, "init", "--quiet", "--bare", dst)
	if err := bare.PushAll(ctx, "file://"+dst); err != nil {
		t.Fatal(err)
	}
	refs := sh(t, dst, nil, "for-each-ref", "--format=%(refname)")
	for _, want := range []string{"refs/heads/main", "refs/heads/side", "refs/tags/v1"} {
		if !strings.Contains(refs, want) {
			t.Errorf("pushed refs %q lack %s", refs, want)
		}
	}
}

// TestDefaultBranchOfADetachedHead: a source whose HEAD names no branch
// says so with ErrDetached.
func TestDefaultBranchOfADetachedHead(t *testing.T) {
	f := newFixture(t)
	sha := sh(t, f.seed, nil, "rev-parse", "HEAD")
	sh(t, f.bare, nil, "update-ref", "--no-deref", "HEAD", sha)
	if _, err := newGit(nil).DefaultBranch(t.Context(), f.url); !errors.Is(err, git.ErrDetached) {
		t.Fatalf("DefaultBranch of a detached HEAD = %v, want ErrDetached", err)
	}
}
