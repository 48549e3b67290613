package git_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// sessionUID owns a session's checkout in these tests when they run as
// root, so that its git runs as someone else, as in production.
const sessionUID = 200777

// sessionCheckout seeds a checkout of repo on branch for a session,
// runs prep in it (as the test's user) and hands it to its owner; it
// returns the checkout, the Git that runs as its owner and a directory
// that owner may write its bundle to.
func sessionCheckout(t *testing.T, repo *git.Repo, branch string, prep func(ws string)) (ws string, as *git.Git, out string) {
	t.Helper()
	top := sandboxtest.Dir(t, "ws")
	ws, out = filepath.Join(top, "repo"), filepath.Join(top, "out")
	if err := repo.Seed(t.Context(), ws, git.SeedOptions{Branch: branch, Start: "origin/main", RemoteURL: "http://forge.invalid/o/r.git",
		Name: "dev-bot", Email: "dev-bot@disinto.local"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(ws)
	}
	env := append([]string{"HOME=" + top}, isolatedEnv...)
	if os.Geteuid() != 0 {
		return ws, git.New(git.Options{Env: env}), out
	}
	own(t, ws)
	own(t, out)
	return ws, git.New(git.Options{Env: env, RunAs: &git.User{UID: sessionUID, GID: sessionUID}}), out
}

// own hands the tree at root to the session's uid (when running as root).
func own(t *testing.T, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, sessionUID, sessionUID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// asOwner runs git in the checkout ws for its owner, which keeps it.
func asOwner(t *testing.T, ws string, args ...string) string {
	t.Helper()
	out := sh(t, ws, nil, append([]string{"-c", "safe.directory=*"}, args...)...)
	own(t, ws)
	return out
}

// TestImportUntrusted: a session's commit comes back through a bundle
// its own user writes; a branch it lacks is ErrNotFound; a branch with
// nothing new lands without a bundle; an object git's fsck rejects is
// refused.
func TestImportUntrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := cloneFixture(t, newGit(nil), f)
	ctx := t.Context()
	ws, as, out := sessionCheckout(t, repo, "fix/issue-7", func(ws string) { commitIn(t, ws, "m.txt", "model\n") })
	head := asOwner(t, ws, "rev-parse", "HEAD")
	imp := git.Import{As: as, Checkout: ws, Branch: "fix/issue-7", Into: "refs/disinto/session/fix/issue-7",
		Bundle: filepath.Join(out, "branch.bundle"), Have: []string{"refs/remotes/origin/main"}}
	got, err := repo.ImportUntrusted(ctx, imp)
	if err != nil || got != head {
		t.Fatalf("import = %s, %v; want %s", got, err, head)
	}
	if sha, err := repo.RefSHA(ctx, imp.Into); err != nil || sha != head {
		t.Errorf("%s = %s, %v; want %s", imp.Into, sha, err, head)
	}
	if n, err := repo.CountBetween(ctx, "origin/main", imp.Into); err != nil || n != 1 {
		t.Errorf("commits ahead = %d, %v; want 1", n, err)
	}
	if _, err := os.Lstat(imp.Bundle); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the bundle is left behind: %v", err)
	}
	// Again, with nothing new.
	if got, err := repo.ImportUntrusted(ctx, imp); err != nil || got != head {
		t.Errorf("second import = %s, %v", got, err)
	}
	missing := imp
	missing.Branch = "missing"
	if _, err := repo.ImportUntrusted(ctx, missing); !errors.Is(err, git.ErrNotFound) {
		t.Errorf("import of a branch the checkout lacks: %v", err)
	}
	// A tree with an entry named .git, which fsck rejects.
	bad := badTree(t, ws)
	parent := asOwner(t, ws, "rev-parse", "HEAD")
	commit := asOwner(t, ws, "commit-tree", bad, "-p", parent, "-m", "bad tree")
	asOwner(t, ws, "update-ref", "refs/heads/fix/issue-7", commit)
	if _, err := repo.ImportUntrusted(ctx, imp); err == nil || !strings.Contains(err.Error(), "fsck") {
		t.Errorf("import of an object fsck rejects: %v", err)
	}
	if sha, _ := repo.RefSHA(ctx, imp.Into); sha != head {
		t.Errorf("%s moved to %s after a refused import", imp.Into, sha)
	}
}

// badTree writes a tree with an entry named .git into the repository at
// dir and returns its name.
func badTree(t *testing.T, dir string) string {
	t.Helper()
	blob := asOwner(t, dir, "hash-object", "-w", "README.md")
	raw := make([]byte, 0, 64)
	raw = append(raw, "100644 .git\x00"...)
	for i := 0; i < len(blob); i += 2 {
		var b byte
		for _, c := range blob[i : i+2] {
			b <<= 4
			if c >= 'a' {
				b |= byte(c-'a') + 10
			} else {
				b |= byte(c - '0')
			}
		}
		raw = append(raw, b)
	}
	p := filepath.Join(t.TempDir(), "tree")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return asOwner(t, dir, "hash-object", "-t", "tree", "-w", "--literally", p)
}

// TestImportRefusesUnsafeCheckout: a checkout whose .git leads git to
// another repository (alternates, a link to its refs) or to a FIFO is
// refused at once, with the path it holds, and nothing of the other
// repository reaches the clone.
func TestImportRefusesUnsafeCheckout(t *testing.T) {
	t.Parallel()
	other := newFixture(t)
	secret := other.pushMain(t, "secret.txt", "OTHER-PROJECT-SECRET\n")
	otherGit := filepath.Join(other.seed, ".git")
	attacks := map[string]func(gitDir string) error{
		"alternates": func(d string) error {
			return os.WriteFile(filepath.Join(d, "objects", "info", "alternates"), []byte(filepath.Join(otherGit, "objects")+"\n"), 0o644)
		},
		"http-alternates": func(d string) error {
			return os.WriteFile(filepath.Join(d, "objects", "info", "http-alternates"), []byte("http://forge.invalid/x.git/objects\n"), 0o644)
		},
		"commondir": func(d string) error {
			return os.WriteFile(filepath.Join(d, "commondir"), []byte(otherGit+"\n"), 0o644)
		},
		"symlinked ref": func(d string) error {
			ref := filepath.Join(d, "refs", "heads", "fix", "issue-7")
			if err := os.Remove(ref); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(otherGit, "refs", "heads", "main"), ref)
		},
		"symlinked refs dir": func(d string) error {
			dir := filepath.Join(d, "refs", "heads", "fix")
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(otherGit, "refs", "heads"), dir)
		},
		"symlinked objects": func(d string) error {
			dir := filepath.Join(d, "objects")
			if err := os.Rename(dir, dir+".old"); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(otherGit, "objects"), dir)
		},
		"fifo ref": func(d string) error {
			ref := filepath.Join(d, "refs", "heads", "fix", "issue-7")
			if err := os.Remove(ref); err != nil {
				return err
			}
			return syscall.Mkfifo(ref, 0o644)
		},
		"fifo packed-refs": func(d string) error {
			p := filepath.Join(d, "packed-refs")
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return syscall.Mkfifo(p, 0o644)
		},
		"fifo config": func(d string) error {
			cfg := filepath.Join(d, "config")
			if err := os.Remove(cfg); err != nil {
				return err
			}
			return syscall.Mkfifo(cfg, 0o644)
		},
		"symlinked .git": func(d string) error {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
			return os.Symlink(otherGit, d)
		},
	}
	for name, plant := range attacks {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			repo := cloneFixture(t, newGit(nil), f)
			ws, as, out := sessionCheckout(t, repo, "fix/issue-7", func(ws string) {
				if err := plant(filepath.Join(ws, ".git")); err != nil {
					t.Fatal(err)
				}
			})
			imp := git.Import{As: as, Checkout: ws, Branch: "fix/issue-7", Into: "refs/disinto/session/fix/issue-7",
				Bundle: filepath.Join(out, "branch.bundle"), Have: []string{"refs/remotes/origin/main"}}
			done := make(chan error, 1)
			go func() {
				_, err := repo.ImportUntrusted(t.Context(), imp)
				done <- err
			}()
			select {
			case err := <-done:
				var ue *git.UnsafeCheckoutError
				if !errors.As(err, &ue) || !strings.HasPrefix(ue.Path, filepath.Join(ws, ".git")) {
					t.Errorf("import: %v; want an UnsafeCheckoutError naming a path in the checkout's .git", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the import blocks")
			}
			if sha, _ := repo.RefSHA(t.Context(), imp.Into); sha != "" {
				t.Errorf("%s = %s after a refused import", imp.Into, sha)
			}
			if _, err := repo.ShowFile(t.Context(), secret, "secret.txt"); err == nil {
				t.Error("the clone holds the other repository's commit")
			}
		})
	}
}
