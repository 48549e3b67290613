package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// The commits of an untrusted checkout come back as a bundle its owner
// writes (git runs there as that user only), which the daemon checks
// and fetches into its clone with every object fsck'd. Before anything,
// the checkout is walked (never following a link) and refused when it
// could make its owner's git read elsewhere or block.

// MaxBundle bounds the bundle a checkout hands back.
const MaxBundle int64 = 1 << 30

// maxCheckoutEntries bounds the walk of a checkout's .git.
const maxCheckoutEntries = 1 << 20

// exportTimeout bounds the git commands run as the checkout's owner.
const exportTimeout = 10 * time.Minute

// UnsafeCheckoutError is an untrusted checkout refused before any git
// runs in it: Path is what was found there, Why what is wrong with it.
type UnsafeCheckoutError struct {
	Path string
	Why  string
}

// Error implements error.
func (e *UnsafeCheckoutError) Error() string {
	return fmt.Sprintf("checkout refused: %s: %s", e.Path, e.Why)
}

// CheckCheckout refuses, with an *UnsafeCheckoutError, a checkout whose
// .git is not a plain directory, has alternates, http-alternates or a
// commondir (which make git read another repository), or holds anything
// but directories and regular files under refs, objects and info or
// as packed-refs, HEAD and the other files at its top (a link leads git to
// another repository's refs or to any file; a FIFO blocks it). Nothing
// is opened but directories, and no link is followed.
func CheckCheckout(dir string) error {
	gitDir := filepath.Join(dir, ".git")
	unsafe := func(p, why string) error { return &UnsafeCheckoutError{Path: p, Why: why} }
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return fmt.Errorf("check checkout %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return unsafe(gitDir, "not a directory")
	}
	for _, rel := range []string{"commondir", "objects/info/alternates", "objects/info/http-alternates"} {
		p := filepath.Join(gitDir, filepath.FromSlash(rel))
		if _, err := os.Lstat(p); err == nil {
			return unsafe(p, "leads git to another repository")
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check checkout %s: %w", dir, err)
		}
	}
	top, err := os.ReadDir(gitDir)
	if err != nil {
		return fmt.Errorf("check checkout %s: %w", dir, err)
	}
	for _, e := range top {
		if !e.IsDir() && !e.Type().IsRegular() {
			return unsafe(filepath.Join(gitDir, e.Name()), "not a regular file ("+e.Type().String()+")")
		}
	}
	n := 0
	for _, sub := range []string{"refs", "objects", "info"} {
		err := filepath.WalkDir(filepath.Join(gitDir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if n++; n > maxCheckoutEntries {
				return unsafe(gitDir, fmt.Sprintf("more than %d entries under refs, objects and info", maxCheckoutEntries))
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				return unsafe(p, "neither a directory nor a regular file ("+d.Type().String()+")")
			}
			return nil
		})
		var ue *UnsafeCheckoutError
		if errors.As(err, &ue) {
			return ue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check checkout %s: %w", dir, err)
		}
	}
	return nil
}

// Import describes reading one branch of an untrusted checkout back
// into the clone.
type Import struct {
	// As runs git as the checkout's owner: a Git with RunAs when the
	// owner has a uid of its own. It must carry no credential.
	As *Git
	// Checkout is the untrusted checkout's directory.
	Checkout string
	// Branch is the checkout's branch read back; Into is the clone's ref
	// it lands in.
	Branch, Into string
	// Bundle is where As writes the bundle: a path its user may write
	// and the daemon then reads as an untrusted file.
	Bundle string
	// Have are revisions of the clone the checkout may share (the
	// primary branch's head): the bundle leaves out what they reach.
	Have []string
}

// ImportUntrusted reads o.Branch of the untrusted checkout o.Checkout into
// o.Into of the clone and returns its head. The checkout is first
// checked (CheckCheckout: an *UnsafeCheckoutError refuses it); git then
// runs in it only as o.As, which writes a bundle of the branch; the
// daemon copies that bundle as an untrusted file, verifies it, unpacks
// it in a scratch repository of its own and fetches from there with
// transfer.fsckObjects, so every new object is checked. A checkout
// without the branch gives ErrNotFound.
func (r *Repo) ImportUntrusted(ctx context.Context, o Import) (string, error) {
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("import %s from %s: %w", o.Branch, o.Checkout, err)
	}
	if o.As == nil || o.As.creds != nil {
		return fail(errors.New("the checkout's git must run as its owner, without credentials"))
	}
	if err := CheckCheckout(o.Checkout); err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	as := func(args ...string) (string, error) {
		return o.As.exec(sctx, call{dir: o.Checkout, noCfg: true, args: args})
	}
	out, err := as("rev-parse", "--verify", "--quiet", "refs/heads/"+o.Branch+"^{commit}")
	if exitCode(err) == 1 {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	head := strings.TrimSpace(out)
	if !isHex(head) {
		return fail(fmt.Errorf("checkout's git printed %q for the branch head", head))
	}
	if _, err := r.g.run(ctx, r.dir, "cat-file", "-e", head+"^{commit}"); err == nil {
		// Nothing new: the clone has the commit already.
		return head, r.UpdateRef(ctx, o.Into, head)
	}
	args := []string{"bundle", "create", "--quiet", o.Bundle, "refs/heads/" + o.Branch}
	for _, rev := range o.Have {
		sha, err := r.RefSHA(ctx, rev)
		if err != nil {
			return fail(err)
		}
		if sha == "" {
			continue
		}
		if _, err := as("cat-file", "-e", sha+"^{commit}"); err == nil {
			args = append(args, "^"+sha)
		}
	}
	if err := os.Remove(o.Bundle); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	if _, err := as(args...); err != nil {
		return fail(err)
	}
	scratch, err := os.MkdirTemp("", "disinto-import-*")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(scratch)
	bundle := filepath.Join(scratch, "branch.bundle")
	if err := copyUntrusted(o.Bundle, bundle, MaxBundle); err != nil {
		return fail(err)
	}
	_ = os.Remove(o.Bundle)
	if err := r.fetchBundleChecked(ctx, bundle, scratch, o.Branch, o.Into); err != nil {
		return fail(err)
	}
	got, err := r.RefSHA(ctx, o.Into)
	if err != nil {
		return fail(err)
	}
	if got != head {
		return fail(fmt.Errorf("the bundle's %s is %s, not %s", o.Branch, got, head))
	}
	return head, nil
}

// fetchBundleChecked fetches branch of the untrusted bundle into the
// clone's ref into. A fetch from a bundle does not fsck what it unpacks,
// so the bundle is unpacked into a bare scratch repository (borrowing
// the clone's objects for the bundle's prerequisites) and fetched from
// there over the pack protocol, whose index-pack checks every object.
func (r *Repo) fetchBundleChecked(ctx context.Context, bundle, scratch, branch, into string) error {
	if _, err := r.g.run(ctx, r.dir, "bundle", "verify", "--quiet", bundle); err != nil {
		return err
	}
	bare := filepath.Join(scratch, "bundle.git")
	if _, err := r.g.exec(ctx, call{dir: scratch, noCfg: true, args: []string{"init", "--quiet", "--bare", bare}}); err != nil {
		return err
	}
	objects, err := r.g.run(ctx, r.dir, "rev-parse", "--path-format=absolute", "--git-path", "objects")
	if err != nil {
		return err
	}
	alt := filepath.Join(bare, "objects", "info", "alternates")
	if err := os.WriteFile(alt, []byte(strings.TrimSpace(objects)+"\n"), 0o600); err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	if _, err := r.g.exec(ctx, call{dir: bare, noCfg: true, args: []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", bundle, ref + ":" + ref}}); err != nil {
		return err
	}
	defer r.g.lock(r.dir)()
	args := []string{"-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true",
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--force", bare, "+" + ref + ":" + into}
	_, err = r.g.exec(ctx, call{dir: r.dir, noCfg: true, args: args})
	return err
}

// copyUntrusted copies the untrusted file src (see
// atomicfile.OpenUntrusted) to dst, a new file of the daemon's, refusing
// more than max bytes.
func copyUntrusted(src, dst string, max int64) error {
	in, _, err := atomicfile.OpenUntrusted(src, max)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if n > max {
		return fmt.Errorf("copy %s: larger than %d bytes: %w", src, max, atomicfile.ErrUnsafe)
	}
	return nil
}

// isHex reports whether s is a full object name.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
