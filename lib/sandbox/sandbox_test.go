package sandbox_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root; the unisolated layout is tested without it")
	}
}

func TestUnisolatedLayout(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(t.TempDir(), "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sb.Workspace("dev-p-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	if ws.Isolated() || ws.Credential() != nil {
		t.Error("unisolated workspace has an identity of its own")
	}
	for _, d := range []string{ws.Home(), ws.ConfigDir(), ws.TempDir(), filepath.Dir(ws.Out("x"))} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if env := ws.Env(); env["HOME"] != ws.Home() || env["CLAUDE_CONFIG_DIR"] != ws.ConfigDir() || env["TMPDIR"] != ws.TempDir() {
		t.Errorf("env %v", env)
	}
	if _, err := sb.Workspace("../escape"); err == nil {
		t.Error("a key with a path in it was accepted")
	}
	if err := sb.Remove("dev-p-issue-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace left after Remove: %v", err)
	}
	if err := sb.Remove("dev-p-issue-1"); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestIsolationNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as root")
	}
	_, err := sandbox.New(sandbox.Options{Root: t.TempDir(), Isolate: true})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("isolation without root: %v", err)
	}
}

func TestUnreachableRootIsAClearError(t *testing.T) {
	needRoot(t)
	_, err := sandbox.New(sandbox.Options{Root: filepath.Join(t.TempDir(), "sessions"), Isolate: true})
	if err == nil || !strings.Contains(err.Error(), "chmod o+x") {
		t.Fatalf("root under a private directory: %v", err)
	}
}

func TestIsolatedWorkspaces(t *testing.T) {
	needRoot(t)
	root := sandboxtest.Dir(t, "sessions")
	// Claims are host-wide: a base of this process's own keeps two runs
	// of the package on one machine off each other's uids.
	base := 310000 + 2*(os.Getpid()%5000)
	sb, err := sandbox.New(sandbox.Options{Root: root, Isolate: true, UIDBase: base, UIDCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := sb.Workspace("dev-p-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sb.Workspace("review-p-pr-2")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID() == b.UID() || a.UID() < base || b.UID() > base+1 {
		t.Fatalf("uids %d and %d", a.UID(), b.UID())
	}
	if _, err := sb.Workspace("third"); !errors.Is(err, sandbox.ErrExhausted) {
		t.Errorf("third workspace in a pool of two: %v", err)
	}
	// The allocation is the home's owner: a new Sandbox finds it again.
	again, err := sandbox.New(sandbox.Options{Root: root, Isolate: true, UIDBase: base, UIDCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := again.Workspace("dev-p-issue-1")
	if err != nil || a2.UID() != a.UID() {
		t.Fatalf("after a restart: uid %d, %v; want %d", a2.UID(), err, a.UID())
	}
	// The top directory stays root's, so the session cannot swap its parts.
	if fi, _ := os.Stat(a.Dir()); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("workspace top directory not root's")
	}

	// A session of one workspace cannot read the other's, nor root's files.
	secret := filepath.Join(b.Home(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Own(secret); err != nil {
		t.Fatal(err)
	}
	rootOnly := filepath.Join(filepath.Dir(root), "state")
	if err := os.WriteFile(rootOnly, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{secret, rootOnly, b.Repo()} {
		out, err := runAs(a, "cat", p)
		if err == nil || strings.Contains(out, "s3cret") {
			t.Errorf("workspace %d read %s: %q, %v", a.UID(), p, out, err)
		}
	}
	// Its own files it can write.
	if out, err := runAs(a, "sh", "-c", "echo ok > "+a.Out("phase")); err != nil {
		t.Fatalf("write own outbox: %v: %s", err, out)
	}
	if data, _, err := atomicfile.ReadUntrusted(a.Out("phase"), 100); err != nil || string(data) != "ok\n" {
		t.Errorf("ReadOut = %q, %v", data, err)
	}
}

func TestReadOutRefusesLinksAndSize(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sb.Workspace("w")
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "daemon.env")
	if err := os.WriteFile(target, []byte("FORGE_TOKEN=x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ws.Out("phase")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := atomicfile.ReadUntrusted(ws.Out("phase"), 1000); !errors.Is(err, atomicfile.ErrUnsafe) {
		t.Errorf("symlink read: %v", err)
	}
	if err := syscall.Mkfifo(ws.Out("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := atomicfile.ReadUntrusted(ws.Out("fifo"), 1000); !errors.Is(err, atomicfile.ErrUnsafe) {
		t.Errorf("fifo read: %v", err)
	}
	if err := os.WriteFile(ws.Out("big"), make([]byte, 101), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := atomicfile.ReadUntrusted(ws.Out("big"), 100); !errors.Is(err, atomicfile.ErrUnsafe) {
		t.Errorf("oversized read: %v", err)
	}
	if _, _, err := atomicfile.ReadUntrusted(ws.Out("missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestReapEndsEscapedProcesses(t *testing.T) {
	needRoot(t)
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions"), Isolate: true, UIDBase: 320000, UIDCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sb.Workspace("w")
	if err != nil {
		t.Fatal(err)
	}
	// A process in a session of its own, outside any group the runner kills.
	cmd := exec.Command("setsid", "sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: ws.Credential()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := ws.Reap(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's process survived Reap")
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"dev My/Proj issue 3": "dev-my-proj-issue-3", "_x": "x"} {
		parts := strings.Fields(in)
		if got := sandbox.Key(parts...); got != want {
			t.Errorf("Key(%q) = %q, want %q", parts, got, want)
		}
	}
}

// runAs runs a command as the workspace's identity.
func runAs(ws *sandbox.Workspace, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: ws.Credential()}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestUIDsAreClaimedHostWide: two sandboxes over different roots (two
// daemons, or two test processes, on one host) never hand out the same
// uid, since reaping one's session would kill the other's; a uid another
// process holds is skipped, and a removed workspace frees its claim.
func TestUIDsAreClaimedHostWide(t *testing.T) {
	needRoot(t)
	claims := t.TempDir()
	const base = 320000
	open := func(name string) *sandbox.Sandbox {
		t.Helper()
		sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, name), Isolate: true, UIDBase: base, UIDCount: 3, ClaimDir: claims})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	// Another process holds the pool's first uid.
	f, err := os.OpenFile(filepath.Join(claims, fmt.Sprintf("uid-%d.lock", base)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	one, two := open("one"), open("two")
	a, err := one.Workspace("dev-p-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := two.Workspace("dev-p-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID() != base+1 || b.UID() != base+2 {
		t.Fatalf("uids %d and %d, want %d and %d", a.UID(), b.UID(), base+1, base+2)
	}
	if _, err := two.Workspace("dev-p-issue-2"); !errors.Is(err, sandbox.ErrExhausted) {
		t.Fatalf("a pool whose free uids are claimed elsewhere: %v", err)
	}
	// The same root opened again in this process (a rebuilt daemon) keeps
	// its workspaces.
	again, err := sandbox.New(sandbox.Options{Root: filepath.Dir(a.Dir()), Isolate: true, UIDBase: base, UIDCount: 3, ClaimDir: claims})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := again.Workspace("dev-p-issue-1"); err != nil || w.UID() != a.UID() {
		t.Fatalf("the workspace again: uid %v, %v", w, err)
	}
	// Removing a workspace frees its uid for the other sandbox.
	if err := one.Remove("dev-p-issue-1"); err != nil {
		t.Fatal(err)
	}
	if w, err := two.Workspace("dev-p-issue-2"); err != nil || w.UID() != base+1 {
		t.Fatalf("after the removal: %v, %v", w, err)
	}
}

// guard records what the sandbox told it and refuses the uids in no.
type guard struct {
	admitted, revoked []int
	no                map[int]bool
}

func (g *guard) Admit(uid int) error {
	if g.no[uid] {
		return errors.New("refused")
	}
	g.admitted = append(g.admitted, uid)
	return nil
}

func (g *guard) Revoke(uid int) error { g.revoked = append(g.revoked, uid); return nil }

// TestGuard: every uid a workspace gets passes the guard first (the
// egress firewall), a refused one hands out no workspace and stays free,
// and a removed workspace's uid is revoked.
func TestGuard(t *testing.T) {
	needRoot(t)
	const base = 330000
	g := &guard{no: map[int]bool{base: true}}
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions"), Isolate: true, UIDBase: base, UIDCount: 2, ClaimDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sb.SetGuard(g)
	if _, err := sb.Workspace("a"); err == nil {
		t.Fatal("a workspace whose uid the guard refused")
	}
	delete(g.no, base)
	ws, err := sb.Workspace("a")
	if err != nil || ws.UID() != base {
		t.Fatalf("after the refusal: %v, %v; want uid %d again", ws, err, base)
	}
	if _, err := sb.Workspace("a"); err != nil {
		t.Fatal(err)
	}
	if err := sb.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.admitted, []int{base, base, base}) || !slices.Equal(g.revoked, []int{base}) {
		t.Errorf("admitted %v, revoked %v", g.admitted, g.revoked)
	}
}
