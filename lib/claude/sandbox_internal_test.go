package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/sandbox"
)

// TestWorkspaceHoldsNoLogin: the login of the daemon's config directory
// never reaches a workspace, and a login file a session writes never
// replaces it.
func TestWorkspaceHoldsNoLogin(t *testing.T) {
	shared := t.TempDir()
	const loginFile = ".credentials.json"
	login := []byte(`{"claudeAiOauth":{"accessToken":"a1","refreshToken":"r1"}}`)
	if err := os.WriteFile(filepath.Join(shared, loginFile), login, 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := &Exec{opts: Options{ConfigDir: shared}}
	for i, forged := range []string{`{"claudeAiOauth":{"accessToken":"a2","refreshToken":"r2"}}`, `{"claudeAiOauth":{"accessToken":"evil"}}`} {
		ws, err := sb.Workspace("w" + string(rune('0'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.prepareWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		inWS := filepath.Join(ws.ConfigDir(), loginFile)
		if _, err := os.Stat(inWS); !os.IsNotExist(err) {
			t.Fatalf("a login reached the workspace: %v", err)
		}
		if err := os.MkdirAll(ws.ConfigDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(inWS, []byte(forged), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := e.finishWorkspace(ws); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(shared, loginFile)); err != nil || string(got) != string(login) {
		t.Fatalf("shared login after two sessions wrote theirs: %q, %v", got, err)
	}
}
