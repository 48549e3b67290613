package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// Workspace is one session's corner of the sandbox: its checkout, home
// and outbox, and the identity its processes run as.
type Workspace struct {
	key      string
	dir      string
	uid, gid int // -1 when sessions are not isolated
}

// Key is the workspace's name.
func (w *Workspace) Key() string { return w.key }

// Dir is the workspace's root-owned top directory.
func (w *Workspace) Dir() string { return w.dir }

// Repo is the checkout the session works in.
func (w *Workspace) Repo() string { return filepath.Join(w.dir, "repo") }

// Home is the session's HOME.
func (w *Workspace) Home() string { return filepath.Join(w.dir, "home") }

// ConfigDir is the session's CLAUDE_CONFIG_DIR.
func (w *Workspace) ConfigDir() string { return filepath.Join(w.Home(), ".claude") }

// TempDir is the session's TMPDIR.
func (w *Workspace) TempDir() string { return filepath.Join(w.Home(), "tmp") }

// Out is where the session writes the files it hands back.
func (w *Workspace) Out(name string) string { return filepath.Join(w.dir, "out", name) }

// Isolated reports whether the workspace has a uid of its own.
func (w *Workspace) Isolated() bool { return w.uid >= 0 }

// UID is the workspace's uid, -1 when not isolated.
func (w *Workspace) UID() int { return w.uid }

// Credential is the identity of the workspace's processes, nil when they
// run as the daemon. It carries no supplementary groups.
func (w *Workspace) Credential() *syscall.Credential {
	if !w.Isolated() {
		return nil
	}
	return &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid), Groups: []uint32{}}
}

// Env is the part of a session process's environment the workspace
// decides: HOME, TMPDIR and CLAUDE_CONFIG_DIR.
func (w *Workspace) Env() map[string]string {
	return map[string]string{"HOME": w.Home(), "TMPDIR": w.TempDir(), "CLAUDE_CONFIG_DIR": w.ConfigDir()}
}

// create makes the layout: the top directory stays the daemon's, the
// parts the session writes are its own.
func (w *Workspace) create() error {
	if err := os.Mkdir(w.dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(w.dir, 0o711); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for _, d := range []string{filepath.Join(w.dir, "out"), w.ConfigDir(), w.TempDir(), w.Home()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	// home last: its owner is the allocation record.
	for _, d := range []string{filepath.Join(w.dir, "out"), w.ConfigDir(), w.TempDir(), w.Home()} {
		if err := w.chown(d); err != nil {
			return err
		}
	}
	return nil
}

func (w *Workspace) chown(path string) error {
	if !w.Isolated() {
		return nil
	}
	if err := os.Lchown(path, w.uid, w.gid); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// Own hands the tree at path, inside the workspace, to the workspace's
// uid. Call it on what the daemon prepared before a session starts; it
// never follows a symlink.
func (w *Workspace) Own(path string) error {
	if !w.Isolated() {
		return nil
	}
	rel, err := filepath.Rel(w.dir, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("sandbox: %s is not inside workspace %s", path, w.key)
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), rel, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := root.Lchown(p, w.uid, w.gid); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		return nil
	})
}

// Reap kills every process of the workspace's uid, so nothing a session
// left behind (a daemonised child outside its process group) runs on
// while the daemon works in the workspace, or after it is removed.
func (w *Workspace) Reap() error {
	if !w.Isolated() {
		return nil
	}
	for range 50 {
		pids, err := processesOf(w.uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // let the kernel tear them down
	}
	return fmt.Errorf("sandbox: processes of uid %d keep appearing", w.uid)
}

// processesOf lists the live processes whose real or effective uid is uid.
func processesOf(uid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	want := strconv.Itoa(uid)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone already
		}
		if statusUID(status, want) && !zombie(status) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// statusUID reports whether a /proc/<pid>/status names uid as its real,
// effective, saved or filesystem uid.
func statusUID(status []byte, uid string) bool {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			for _, f := range strings.Fields(string(rest)) {
				if f == uid {
					return true
				}
			}
			return false
		}
	}
	return false
}

func zombie(status []byte) bool {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("State:")); ok {
			return strings.HasPrefix(strings.TrimSpace(string(rest)), "Z")
		}
	}
	return false
}

// WriteHome writes a file into the session's home (rel is relative to
// it), owned by the workspace's uid. The home is the session's to shape,
// so the write never leaves the workspace, whatever links it holds, and
// replaces rather than writes through what is there.
func (w *Workspace) WriteHome(rel string, data []byte, perm os.FileMode) error {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer root.Close()
	name := filepath.Join("home", rel)
	if err := root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if w.Isolated() {
		if err := root.Lchown(filepath.Dir(name), w.uid, w.gid); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := root.WriteFile(name, data, perm); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if w.Isolated() {
		if err := root.Lchown(name, w.uid, w.gid); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// ReadHome reads a file of the session's home (rel is relative to it): a
// regular file with one link inside the workspace, of at most max bytes
// (see atomicfile.ReadUntrusted).
func (w *Workspace) ReadHome(rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer root.Close()
	data, _, err := atomicfile.ReadUntrustedIn(root, filepath.Join("home", rel), max)
	if errors.Is(err, atomicfile.ErrUnsafe) {
		return nil, fmt.Errorf("sandbox: %w: %w", err, ErrUnsafe)
	}
	return data, err
}
