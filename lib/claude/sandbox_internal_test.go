package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/sandbox"
)

// TestWorkspaceLogin: a subscription login of the daemon's config
// directory is copied into each workspace before a run, and a refreshed
// one is carried back after it, but only a file of the same shape, and
// never through a link the session planted.
func TestWorkspaceLogin(t *testing.T) {
	shared := t.TempDir()
	login := []byte(`{"claudeAiOauth":{"accessToken":"a1","refreshToken":"r1"}}`)
	if err := os.WriteFile(filepath.Join(shared, credentialsFile), login, 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sb.Workspace("w")
	if err != nil {
		t.Fatal(err)
	}
	e := &Exec{opts: Options{ConfigDir: shared}}
	inWS := filepath.Join(ws.ConfigDir(), credentialsFile)
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	if err := e.prepareWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	if got := read(inWS); got != string(login) {
		t.Fatalf("workspace login = %q", got)
	}
	// The CLI refreshed the token during the run.
	refreshed := `{"claudeAiOauth":{"accessToken":"a2","refreshToken":"r2"}}`
	if err := os.WriteFile(inWS, []byte(refreshed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.finishWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(shared, credentialsFile)); got != refreshed {
		t.Fatalf("shared login after a refresh = %q", got)
	}
	// Something else in its place is not taken back.
	if err := os.WriteFile(inWS, []byte(`{"other":"shape"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.finishWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(shared, credentialsFile)); got != refreshed {
		t.Fatalf("shared login took a file of another shape: %q", got)
	}
	// A link the session put in place of its config directory is neither
	// written through nor read.
	outside := t.TempDir()
	if err := os.RemoveAll(ws.ConfigDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws.ConfigDir()); err != nil {
		t.Fatal(err)
	}
	if err := e.prepareWorkspace(ws); err == nil {
		t.Error("prepared a workspace whose config directory links out of it")
	}
	if _, err := os.Stat(filepath.Join(outside, credentialsFile)); !os.IsNotExist(err) {
		t.Errorf("the login was written through the link: %v", err)
	}
}
