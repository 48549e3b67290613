// Package sandbox confines model sessions. A session is untrusted code
// execution: it gets a workspace of its own (a checkout, a home with its
// claude state, an outbox for the files it hands back) and, when the
// daemon runs as root, an unprivileged uid of its own, so that it can read
// and write nothing of the factory's but that workspace.
//
// Layout under Root (root-owned, mode 0711: searchable, not listable):
//
//	<Root>/<key>/          root 0711   one workspace; the session cannot rename or replace its parts
//	<Root>/<key>/home/     uid  0700   HOME, CLAUDE_CONFIG_DIR (home/.claude), TMPDIR (home/tmp)
//	<Root>/<key>/repo/     uid  0700   the checkout the session works in
//	<Root>/<key>/out/      uid  0700   phase, result and verdict files the daemon reads back
//
// The uid of a workspace is the owner of its home directory, so the
// allocation survives restarts without a state file of its own. Every
// workspace has a distinct uid from [UIDBase, UIDBase+UIDCount), which keeps
// one session out of another's workspace.
//
// Without root the daemon cannot switch uids: New with Isolate fails with
// ErrUnavailable, and a caller that accepts unisolated sessions gets the
// same layout owned by the daemon's own uid.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
)

// Defaults of the uid pool.
const (
	DefaultUIDBase  = 200000
	DefaultUIDCount = 1000
)

// Sentinel errors.
var (
	// ErrUnavailable means isolation was asked for but this process cannot
	// provide it (it does not run as root).
	ErrUnavailable = errors.New("session isolation unavailable")
	// ErrExhausted means every uid of the pool is taken by a workspace.
	ErrExhausted = errors.New("session uid pool exhausted")
	// ErrUnsafe means a part of a workspace is not what it must be.
	ErrUnsafe = errors.New("unsafe workspace")
)

// Options configures a Sandbox.
type Options struct {
	// Root holds every workspace; it is created when missing.
	Root string
	// Isolate runs sessions under their own uids; it needs root.
	Isolate bool
	// UIDBase and UIDCount bound the uid pool; defaults DefaultUIDBase
	// and DefaultUIDCount.
	UIDBase, UIDCount int
	// ClaimDir holds the host-wide claims of the uids in use (see
	// claim.go); default DefaultClaimDir.
	ClaimDir string
	// Log receives one line per workspace created or removed.
	Log zerolog.Logger
}

// Sandbox hands out workspaces. It is safe for concurrent use; one
// process owns a Root (the daemon's data-dir lock guarantees that).
type Sandbox struct {
	o     Options
	mu    sync.Mutex
	guard Guard
}

// Guard is told of each uid a workspace gets before the workspace is
// handed out, and of each uid freed once no process of it is left: the
// egress firewall puts the uid under its rules. A uid the guard refuses
// runs nothing.
type Guard interface {
	Admit(uid int) error
	Revoke(uid int) error
}

// SetGuard makes g the guard of every uid handed out from now on; call
// it before the first Workspace.
func (s *Sandbox) SetGuard(g Guard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guard = g
}

var keyRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// New returns the sandbox over o.Root. With Isolate it fails with
// ErrUnavailable unless the process runs as root, and with a clear error
// when a directory above Root keeps session users out.
func New(o Options) (*Sandbox, error) {
	if o.Root == "" {
		return nil, errors.New("sandbox: no root directory")
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	o.Root = abs
	if o.UIDBase <= 0 {
		o.UIDBase = DefaultUIDBase
	}
	if o.UIDCount <= 0 {
		o.UIDCount = DefaultUIDCount
	}
	if o.ClaimDir == "" {
		o.ClaimDir = DefaultClaimDir
	}
	if o.Isolate && os.Geteuid() != 0 {
		return nil, fmt.Errorf("sandbox: sessions need their own uid and this process runs as uid %d, not root: %w", os.Geteuid(), ErrUnavailable)
	}
	if err := os.MkdirAll(o.Root, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(o.Root, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if o.Isolate {
		if err := searchable(o.Root); err != nil {
			return nil, err
		}
	}
	return &Sandbox{o: o}, nil
}

// searchable checks that every directory from / down to dir lets other
// users pass, or a session could never reach its workspace.
func searchable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: %s (mode %04o) keeps session users out of %s: allow others to search it (chmod o+x) or move the data dir", d, fi.Mode().Perm(), dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// Isolated reports whether sessions run under their own uids.
func (s *Sandbox) Isolated() bool { return s.o.Isolate }

// Workspace returns the workspace of key, creating it (and allocating its
// uid) on first use. Keys are lowercase names such as "dev-proj-issue-42".
func (s *Sandbox) Workspace(key string) (*Workspace, error) {
	if !keyRe.MatchString(key) {
		return nil, fmt.Errorf("sandbox: invalid workspace key %q", key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &Workspace{key: key, dir: filepath.Join(s.o.Root, key), uid: -1, gid: -1}
	if fi, err := os.Lstat(w.Home()); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("sandbox: %s is not a directory: %w", w.Home(), ErrUnsafe)
		}
		if s.o.Isolate {
			st := fi.Sys().(*syscall.Stat_t)
			w.uid, w.gid = int(st.Uid), int(st.Gid)
			if !s.inPool(w.uid) {
				return nil, fmt.Errorf("sandbox: %s is owned by uid %d, outside the session pool: %w", w.Home(), w.uid, ErrUnsafe)
			}
			if ok, err := s.claim(w.uid); err != nil {
				return nil, err
			} else if !ok {
				return nil, fmt.Errorf("sandbox: uid %d of workspace %s is in use by another process on this host (%s): give each daemon its own pool with DISINTO_SESSION_UID_BASE: %w",
					w.uid, key, s.o.ClaimDir, ErrUnsafe)
			}
			if err := s.admit(w.uid); err != nil {
				return nil, err
			}
		}
		return w, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if s.o.Isolate {
		uid, err := s.freeUID()
		if err != nil {
			return nil, err
		}
		if err := s.admit(uid); err != nil {
			s.release(uid)
			return nil, err
		}
		w.uid, w.gid = uid, uid
	}
	if err := w.create(); err != nil {
		return nil, err
	}
	s.o.Log.Debug().Str("workspace", key).Int("uid", w.uid).Msg("workspace created")
	return w, nil
}

// admit passes uid to the guard, if any. Call with s.mu.
func (s *Sandbox) admit(uid int) error {
	if s.guard == nil {
		return nil
	}
	if err := s.guard.Admit(uid); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

func (s *Sandbox) inPool(uid int) bool { return uid >= s.o.UIDBase && uid < s.o.UIDBase+s.o.UIDCount }

// freeUID returns the lowest pool uid that no workspace of this root owns
// and no other sandbox on the host has claimed, and claims it. Call with
// s.mu.
func (s *Sandbox) freeUID() (int, error) {
	used, err := s.usedUIDs()
	if err != nil {
		return 0, err
	}
	for uid := s.o.UIDBase; uid < s.o.UIDBase+s.o.UIDCount; uid++ {
		if used[uid] {
			continue
		}
		if ok, err := s.claim(uid); err != nil {
			return 0, err
		} else if ok {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("sandbox: %d workspaces under %s: %w", s.o.UIDCount, s.o.Root, ErrExhausted)
}

func (s *Sandbox) usedUIDs() (map[int]bool, error) {
	ents, err := os.ReadDir(s.o.Root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	used := map[int]bool{}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(s.o.Root, e.Name(), "home"))
		if err != nil {
			continue
		}
		used[int(fi.Sys().(*syscall.Stat_t).Uid)] = true
	}
	return used, nil
}

// Remove ends every process of the workspace's uid and deletes the
// workspace, freeing its uid. A missing workspace is not an error.
func (s *Sandbox) Remove(key string) error {
	if !keyRe.MatchString(key) {
		return fmt.Errorf("sandbox: invalid workspace key %q", key)
	}
	if _, err := os.Lstat(filepath.Join(s.o.Root, key)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	w, err := s.Workspace(key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.Reap(); err != nil {
		return err
	}
	// RemoveAll never follows symlinks, so whatever the session planted
	// inside cannot redirect the deletion.
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("sandbox: remove workspace %s: %w", key, err)
	}
	if s.o.Isolate {
		if s.guard != nil {
			if err := s.guard.Revoke(w.uid); err != nil {
				s.o.Log.Warn().Err(err).Int("uid", w.uid).Msg("workspace removed, its uid still under the egress rules")
			}
		}
		s.release(w.uid)
	}
	s.o.Log.Debug().Str("workspace", key).Msg("workspace removed")
	return nil
}

// Key joins parts into a workspace key: lowercase, with every character a
// key cannot hold replaced by '-'.
func Key(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	s = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, s)
	return strings.TrimLeft(s, "._-")
}
