// Package sandboxtest helps tests run isolated sessions: a root daemon's
// data dir must let the sessions' uids pass on their way to their
// workspaces, and t.TempDir is private to its owner. Imported from tests
// only.
package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns a new directory named name inside t.TempDir that every user
// may pass through (mode 0711, as is the temporary directory above it).
func Dir(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o711); err != nil {
		t.Fatal(err)
	}
	return p
}
