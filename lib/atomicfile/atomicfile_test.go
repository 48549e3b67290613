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

// TestState: a state record round-trips with mode 0600 in a directory
// made for it; a missing or torn file reads as the zero value and false,
// an unreadable one is an error.
func TestState(t *testing.T) {
	type rec struct {
		Runs int    `json:"runs"`
		Head string `json:"head"`
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "role", "state.json")
	if v, ok, err := atomicfile.ReadState[rec](path); err != nil || ok || v != (rec{}) {
		t.Fatalf("missing: %+v %v %v", v, ok, err)
	}
	if err := atomicfile.WriteState(path, rec{Runs: 3, Head: "abc"}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := atomicfile.ReadState[rec](path); err != nil || !ok || v != (rec{Runs: 3, Head: "abc"}) {
		t.Fatalf("written: %+v %v %v", v, ok, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte(`{"runs": 4, "head": "ab`), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := atomicfile.ReadState[rec](path); err != nil || ok || v != (rec{}) {
		t.Fatalf("torn: %+v %v %v", v, ok, err)
	}
	if _, _, err := atomicfile.ReadState[rec](dir); err == nil {
		t.Fatal("a directory read as state")
	}
}
