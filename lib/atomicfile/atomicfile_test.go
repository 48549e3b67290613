package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/atomicfile"
)

func TestWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "state.json")
	type st struct{ N int }
	if err := atomicfile.WriteJSON(p, st{N: 1}, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteJSON(p, st{N: 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	var got st
	if err := atomicfile.ReadJSON(p, &got); err != nil || got.N != 2 {
		t.Fatalf("ReadJSON = %+v, %v", got, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := atomicfile.ReadJSON(filepath.Join(dir, "missing"), &got); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
