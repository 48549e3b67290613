package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// sessionDataDir is a data dir that session users can reach, as the
// daemon requires when it runs as root.
func sessionDataDir(t testing.TB) string { return sandboxtest.Dir(t, "data") }

func TestOpenSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		// Without root there is no isolation: refused unless accepted.
		_, err := openSandbox(t.TempDir(), false, config.SessionUIDs{}, logx.Nop())
		if err == nil || !strings.Contains(err.Error(), "--allow-unisolated-sessions") {
			t.Fatalf("unisolated sessions without consent: %v", err)
		}
		sb, err := openSandbox(t.TempDir(), true, config.SessionUIDs{}, logx.Nop())
		if err != nil || sb.Isolated() {
			t.Fatalf("with consent: %v, isolated %v", err, sb != nil && sb.Isolated())
		}
		return
	}
	// As root, a data dir session users cannot reach is a clear error...
	if _, err := openSandbox(t.TempDir(), false, config.SessionUIDs{}, logx.Nop()); err == nil || !strings.Contains(err.Error(), "chmod o+x") {
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
	sb, err := openSandbox(data, false, config.SessionUIDs{Base: 310000, Count: 3}, logx.Nop())
	if err != nil || !sb.Isolated() {
		t.Fatalf("as root: %v", err)
	}
	// The operator's pool, not the default one: daemons sharing a host
	// must not end each other's sessions when they free a uid.
	if ws, err := sb.Workspace("dev-proj-issue-1"); err != nil || ws.UID() != 310000 {
		t.Errorf("first workspace: uid %v, %v; want 310000 from the configured pool", ws, err)
	}
	for name, want := range map[string]os.FileMode{".": 0o711, "state": 0o700, "ledger": 0o700, "disinto.env": 0o600, "sessions": 0o711} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %04o", name, fi.Mode().Perm(), err, want)
		}
	}
}
