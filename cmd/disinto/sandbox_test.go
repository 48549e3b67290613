package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// sessionDataDir is a data dir that session users can reach, as the
// daemon requires when it runs as root.
func sessionDataDir(t testing.TB) string { return sandboxtest.Dir(t, "data") }

func TestOpenSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		// Without root there is no isolation: refused unless accepted.
		_, err := openSandbox(t.TempDir(), false, logx.Nop())
		if err == nil || !strings.Contains(err.Error(), "--allow-unisolated-sessions") {
			t.Fatalf("unisolated sessions without consent: %v", err)
		}
		sb, err := openSandbox(t.TempDir(), true, logx.Nop())
		if err != nil || sb.Isolated() {
			t.Fatalf("with consent: %v, isolated %v", err, sb != nil && sb.Isolated())
		}
		return
	}
	// As root, a data dir session users cannot reach is a clear error...
	if _, err := openSandbox(t.TempDir(), false, logx.Nop()); err == nil || !strings.Contains(err.Error(), "chmod o+x") {
		t.Fatalf("unreachable data dir: %v", err)
	}
	// ...and a reachable one is made private but for the sessions' part.
	data := sessionDataDir(t)
	for _, d := range []string{"state", "ledger"} {
		if err := os.Mkdir(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "disinto.env"), []byte("FORGE_TOKEN=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := openSandbox(data, false, logx.Nop())
	if err != nil || !sb.Isolated() {
		t.Fatalf("as root: %v", err)
	}
	for name, want := range map[string]os.FileMode{".": 0o711, "state": 0o700, "ledger": 0o700, "disinto.env": 0o600, "sessions": 0o711} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %04o", name, fi.Mode().Perm(), err, want)
		}
	}
}
