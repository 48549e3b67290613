package secrets_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/secrets"
)

// grepDir fails t if any file under dir contains value.
func grepDir(t *testing.T, dir, value string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, rerr := os.ReadFile(p)
		if rerr == nil && bytes.Contains(b, []byte(value)) {
			t.Errorf("%s holds the secret in clear", p)
		}
		return nil
	})
}

// TestRoundTrip is spec 70 §8.7 scenario 1, plus what is on disk.
func TestRoundTrip(t *testing.T) {
	data := t.TempDir()
	s := secrets.Open(data)
	const value = "bar-7f3a9c-secret"
	if err := s.Set("FOO", []byte(value), false); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("FOO")
	if err != nil || got != value {
		t.Fatalf("Get = %q, %v", got, err)
	}
	names, err := s.List()
	if err != nil || !slices.Equal(names, []string{"FOO"}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	for _, p := range []string{s.KeyFile(), filepath.Join(s.Dir(), "FOO.enc")} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", p, err, st.Mode())
		}
	}
	grepDir(t, data, value)
}

// TestNoOverwrite is scenario 2: an existing secret is replaced only
// with force.
func TestNoOverwrite(t *testing.T) {
	s := secrets.Open(t.TempDir())
	if err := s.Set("FOO", []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("FOO", []byte("two"), false); !errors.Is(err, secrets.ErrExists) {
		t.Fatalf("second set: %v", err)
	}
	if v, _ := s.Get("FOO"); v != "one" {
		t.Fatalf("value changed to %q", v)
	}
	if err := s.Set("FOO", []byte("two"), true); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("FOO"); v != "two" {
		t.Fatalf("forced value %q", v)
	}
}

// TestBadName is scenario 3: nothing is written outside secrets/.
func TestBadName(t *testing.T) {
	data := t.TempDir()
	s := secrets.Open(data)
	for _, n := range []string{"../evil", "foo", "A/B", "", "A.B"} {
		if err := s.Set(n, []byte("x"), true); !errors.Is(err, secrets.ErrBadName) {
			t.Errorf("Set(%q) = %v", n, err)
		}
	}
	ents, _ := os.ReadDir(data)
	if len(ents) != 0 {
		t.Fatalf("files written: %v", ents)
	}
}

// TestRemoveAndMissing: remove, then the secret is not found.
func TestRemoveAndMissing(t *testing.T) {
	s := secrets.Open(t.TempDir())
	if _, err := s.Get("NOPE"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	if err := s.Set("FOO", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("FOO"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("FOO"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

// TestRotate: after rotation every secret and extra file decrypts with
// the new key only; the old key opens nothing.
func TestRotate(t *testing.T) {
	data := t.TempDir()
	s := secrets.Open(data)
	env := filepath.Join(data, ".env.enc")
	if err := s.Set("A", []byte("alpha"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.EncryptFile(env, []byte("FORGE_TOKEN=t0k3n\n")); err != nil {
		t.Fatal(err)
	}
	oldKey, _ := os.ReadFile(s.KeyFile())
	if err := s.Rotate(env); err != nil {
		t.Fatal(err)
	}
	newKey, _ := os.ReadFile(s.KeyFile())
	if bytes.Equal(oldKey, newKey) {
		t.Fatal("key unchanged")
	}
	if v, err := s.Get("A"); err != nil || v != "alpha" {
		t.Fatalf("after rotate: %q, %v", v, err)
	}
	if b, err := s.DecryptFile(env); err != nil || string(b) != "FORGE_TOKEN=t0k3n\n" {
		t.Fatalf("env after rotate: %q, %v", b, err)
	}
	// The old identity alone opens nothing any more.
	if err := os.WriteFile(s.KeyFile(), oldKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("A"); err == nil {
		t.Fatal("the old key still decrypts")
	}
	grepDir(t, data, "alpha")
	grepDir(t, data, "t0k3n")
}
