package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestReadUntrusted: a plain file is read; a symlink, a FIFO, a hard link,
// a file too large and a path leading out of the root are refused at
// once, without reading what they lead to.
func TestReadUntrusted(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"symlink":   func(p string) error { return os.Symlink(secret, p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"hard link": func(p string) error { return os.Link(secret, p) },
		"too large": func(p string) error { return os.WriteFile(p, []byte("0123456789abcdef"), 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for name, mk := range plant {
		p := filepath.Join(out, strings.ReplaceAll(name, " ", "-"))
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			data, _, err := atomicfile.ReadUntrusted(p, 10)
			if !errors.Is(err, atomicfile.ErrUnsafe) || data != nil {
				t.Errorf("%s: read %q, %v; want a refusal", name, data, err)
			} else if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: the error does not name the path: %v", name, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the read blocks", name)
		}
	}
	good := filepath.Join(out, "good")
	if err := os.WriteFile(good, []byte("lessons"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, err := atomicfile.ReadUntrusted(good, 10); err != nil || string(data) != "lessons" {
		t.Errorf("plain file: %q, %v", data, err)
	}
	if _, _, err := atomicfile.ReadUntrusted(filepath.Join(out, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	root, err := os.OpenRoot(out)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Symlink(dir, filepath.Join(out, "up")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"up/secret", "../secret", "symlink"} {
		if data, _, err := atomicfile.ReadUntrustedIn(root, name, 10); err == nil {
			t.Errorf("%s inside the root: read %q", name, data)
		}
	}
	if data, _, err := atomicfile.ReadUntrustedIn(root, "good", 10); err != nil || string(data) != "lessons" {
		t.Errorf("plain file inside the root: %q, %v", data, err)
	}
}
