package config_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/disinto/disinto/lib/config"
)

// sealer encrypts and decrypts env files with one age identity, as
// lib/secrets does with the data dir's.
type sealer struct{ id *age.X25519Identity }

func newSealer(t *testing.T) sealer {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return sealer{id: id}
}

// seal writes plain to path, age-armored to s's identity.
func (s sealer) seal(t *testing.T, path, plain string) {
	t.Helper()
	var out bytes.Buffer
	aw := armor.NewWriter(&out)
	w, err := age.Encrypt(aw, s.id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// decrypt is a config.Decrypter with s's identity.
func (s sealer) decrypt(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(armor.NewReader(bytes.NewReader(data)), s.id)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// envDir is a configuration directory with one project and a plain env
// file holding plain.
func envDir(t *testing.T, plain string) (dir, envFile string) {
	t.Helper()
	dir = t.TempDir()
	envFile = filepath.Join(dir, ".env")
	if plain != "" {
		if err := os.WriteFile(envFile, []byte(plain), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.toml"), []byte("name = \"a\"\nrepo = \"o/a\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, envFile
}

// TestEncryptedEnvMerged: the encrypted env file is read next to the
// plain one; for a key both define the encrypted value wins and the key
// is listed as shadowed; the process environment still wins over both;
// the values of secret-named keys are secrets, wherever they come from.
func TestEncryptedEnvMerged(t *testing.T) {
	s := newSealer(t)
	dir, envFile := envDir(t, "FORGE_URL=http://f:3000\nFORGE_TOKEN=stale-plain-token\nPOLL_INTERVAL=60\n")
	s.seal(t, config.EncryptedEnvFile(envFile), "FORGE_TOKEN=sealed-token-9f3a\nWEBHOOK_SIGNING=sealed-value-77c1\nFORGE_REVIEW_TOKEN=sealed-review-5e2d\n")
	c, err := config.LoadWith(dir, envFile, []string{"FORGE_REVIEW_TOKEN=from-process-0b1c"}, s.decrypt)
	if err != nil {
		t.Fatal(err)
	}
	env := c.Env
	for k, want := range map[string]string{
		"FORGE_URL": "http://f:3000", "FORGE_TOKEN": "sealed-token-9f3a",
		"WEBHOOK_SIGNING": "sealed-value-77c1", "FORGE_REVIEW_TOKEN": "from-process-0b1c",
	} {
		if got := env.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if c.Projects[0].ForgeURL != "http://f:3000" {
		t.Errorf("plain settings not applied: %+v", c.Projects[0])
	}
	if got := env.Shadowed(); !slices.Equal(got, []string{"FORGE_TOKEN"}) {
		t.Errorf("shadowed %v", got)
	}
	sec := c.Secrets()
	for _, v := range []string{"sealed-token-9f3a", "from-process-0b1c"} {
		if !slices.Contains(sec, v) {
			t.Errorf("%q is not among the secrets to mask", v)
		}
	}
	if slices.Contains(sec, "stale-plain-token") || slices.Contains(sec, "http://f:3000") {
		t.Errorf("secrets %v hold a value no longer in force, or a plain setting", sec)
	}
	if !env.Sealed("WEBHOOK_SIGNING") || env.Sealed("FORGE_URL") || env.Sealed("FORGE_REVIEW_TOKEN") {
		t.Error("Sealed marks the wrong keys")
	}
}

// TestEncryptedEnvAlone: without a plain env file the encrypted one
// carries everything.
func TestEncryptedEnvAlone(t *testing.T) {
	s := newSealer(t)
	dir, envFile := envDir(t, "")
	s.seal(t, config.EncryptedEnvFile(envFile), "FORGE_URL=http://sealed:3000\nFORGE_TOKEN=only-sealed-31ab\n")
	c, err := config.LoadWith(dir, envFile, nil, s.decrypt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Env.Get("FORGE_TOKEN") != "only-sealed-31ab" || c.Projects[0].ForgeURL != "http://sealed:3000" {
		t.Fatalf("env %v, project %+v", c.Env.Map(), c.Projects[0])
	}
	if len(c.Env.Shadowed()) != 0 {
		t.Errorf("shadowed %v", c.Env.Shadowed())
	}
}

// TestEncryptedSettingsStayReadable: `secrets env-encrypt` seals the whole
// env file, ordinary settings too; only the values of secret-named keys
// are masked, so an address or the forge URL still reads in logs and in
// doctor.
func TestEncryptedSettingsStayReadable(t *testing.T) {
	s := newSealer(t)
	dir, envFile := envDir(t, "")
	s.seal(t, config.EncryptedEnvFile(envFile), "FORGE_URL=http://sealed:3000\nFORGE_BIND=127.0.0.1\nPOLL_INTERVAL=300\n"+
		"FORGE_TOKEN=sealed-token-9f3a\nFORGE_ADMIN_PASS=sealed-pass-41d0\nANTHROPIC_API_KEY=sk-sealed-key-7a2e\n")
	c, err := config.LoadWith(dir, envFile, nil, s.decrypt)
	if err != nil {
		t.Fatal(err)
	}
	sec := c.Secrets()
	for _, v := range []string{"sealed-token-9f3a", "sealed-pass-41d0", "sk-sealed-key-7a2e"} {
		if !slices.Contains(sec, v) {
			t.Errorf("%q is not among the secrets to mask", v)
		}
	}
	for _, v := range []string{"http://sealed:3000", "127.0.0.1", "300"} {
		if slices.Contains(sec, v) {
			t.Errorf("the setting %q is masked as a secret", v)
		}
	}
}

// TestEncryptedEnvFaults: a wrong identity, a damaged file, a file whose
// decrypted lines are not KEY=VALUE, or nothing to decrypt with, are each
// one line naming the encrypted file, and never the plain values.
func TestEncryptedEnvFaults(t *testing.T) {
	right, wrong := newSealer(t), newSealer(t)
	cases := map[string]struct {
		write func(t *testing.T, path string)
		dec   config.Decrypter
		want  string
	}{
		"wrong identity": {func(t *testing.T, p string) { right.seal(t, p, "FORGE_TOKEN=secret-aa11bb\n") }, wrong.decrypt, "cannot decrypt"},
		"damaged": {func(t *testing.T, p string) {
			right.seal(t, p, "FORGE_TOKEN=secret-aa11bb\n")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)/2], 0o600)
		}, right.decrypt, "cannot decrypt"},
		"not dotenv":    {func(t *testing.T, p string) { right.seal(t, p, "FORGE_TOKEN=secret-aa11bb\n$(touch /tmp/pwned)\n") }, right.decrypt, ":2: expected KEY=VALUE"},
		"no decrypter":  {func(t *testing.T, p string) { right.seal(t, p, "FORGE_TOKEN=secret-aa11bb\n") }, nil, "no age identity"},
		"not decrypted": {func(t *testing.T, p string) { os.WriteFile(p, []byte("FORGE_TOKEN=secret-aa11bb\n"), 0o600) }, right.decrypt, "cannot decrypt"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, envFile := envDir(t, "FORGE_URL=http://f:3000\n")
			enc := config.EncryptedEnvFile(envFile)
			tc.write(t, enc)
			_, err := config.LoadWith(dir, envFile, nil, tc.dec)
			var ps config.Problems
			if !errors.As(err, &ps) || len(ps) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			msg := ps[0].Error()
			if !strings.HasPrefix(msg, enc) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "secret-aa11bb") {
				t.Fatalf("problem %q", msg)
			}
			if !errors.Is(err, config.ErrInvalid) && !errors.Is(err, config.ErrNoDecrypter) {
				t.Fatalf("unwraps to neither sentinel: %v", err)
			}
		})
	}
}
