// Package secrets keeps secrets at rest, encrypted with age
// (filippo.io/age, the library: no external binary): one file per secret,
// <data>/secrets/<NAME>.enc, and an X25519 identity at
// <data>/keys/age.txt (0600), created on first use. Values are read from
// stdin by the CLI, never argv, and never logged by this package.
//
// Rotation never strands a secret: the new identity is added in front of
// the old one in the key file, every file is re-encrypted to it, and only
// then is the old identity dropped; a crash in between leaves a key file
// that decrypts everything.
package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/disinto/disinto/lib/datadir"
)

// Errors.
var (
	// ErrNotFound: no secret of that name is stored.
	ErrNotFound = errors.New("secret not stored")
	// ErrExists: the secret is stored and overwriting was not asked for.
	ErrExists = errors.New("secret exists (use --force to replace it)")
	// ErrBadName: the name is not NAME-shaped.
	ErrBadName = errors.New("not a secret name (A-Z, 0-9 and _, starting with a letter, at most 64)")
	// ErrEmpty: an empty value.
	ErrEmpty = errors.New("empty value")
)

// namePattern is the form of a secret name (spec 70 §8.6).
var namePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// Ext ends every secret file.
const Ext = ".enc"

// Store is the secrets of one data dir. Its methods are safe to call from
// one process at a time.
type Store struct {
	dir string // <data>/secrets
	key string // <data>/keys/age.txt
}

// Open returns the store under dataDir; nothing is created until needed.
func Open(dataDir string) *Store {
	l := datadir.New(dataDir)
	return &Store{dir: l.Secrets(), key: l.AgeKey()}
}

// Dir is where the secret files are.
func (s *Store) Dir() string { return s.dir }

// KeyFile is the identity file.
func (s *Store) KeyFile() string { return s.key }

// CheckName validates a secret name.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%q: %w", name, ErrBadName)
	}
	return nil
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name+Ext) }

// identities loads the key file, creating it with a fresh identity when
// create is set and it does not exist.
func (s *Store) identities(create bool) ([]*age.X25519Identity, error) {
	data, err := os.ReadFile(s.key)
	if errors.Is(err, fs.ErrNotExist) && create {
		id, gerr := age.GenerateX25519Identity()
		if gerr != nil {
			return nil, fmt.Errorf("generate age identity: %w", gerr)
		}
		if err := writeKeys(s.key, []*age.X25519Identity{id}); err != nil {
			return nil, err
		}
		return []*age.X25519Identity{id}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("age identity: %w", err)
	}
	parsed, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("age identity %s: %w", s.key, err)
	}
	var out []*age.X25519Identity
	for _, id := range parsed {
		if x, ok := id.(*age.X25519Identity); ok {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("age identity %s: no X25519 identity", s.key)
	}
	return out, nil
}

// writeKeys writes the identities, the one encrypted to first, at 0600.
func writeKeys(path string, ids []*age.X25519Identity) error {
	var b strings.Builder
	b.WriteString("# disinto secrets identity (age). Keep it private; losing it loses every secret.\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "# public key: %s\n%s\n", id.Recipient(), id)
	}
	return writeFile(path, []byte(b.String()))
}

// writeFile writes data at path atomically, 0600 in a 0700 directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// seal encrypts plain to the first identity, armored.
func seal(ids []*age.X25519Identity, plain []byte) ([]byte, error) {
	var out bytes.Buffer
	aw := armor.NewWriter(&out)
	w, err := age.Encrypt(aw, ids[0].Recipient())
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// unseal decrypts data with any of the identities.
func unseal(ids []*age.X25519Identity, data []byte) ([]byte, error) {
	list := make([]age.Identity, len(ids))
	for i, id := range ids {
		list[i] = id
	}
	r, err := age.Decrypt(armor.NewReader(bytes.NewReader(data)), list...)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// Set stores value under name; an existing secret is replaced only with
// force.
func (s *Store) Set(name string, value []byte, force bool) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if len(value) == 0 {
		return fmt.Errorf("secret %s: %w", name, ErrEmpty)
	}
	if _, err := os.Stat(s.path(name)); err == nil && !force {
		return fmt.Errorf("secret %s: %w", name, ErrExists)
	}
	ids, err := s.identities(true)
	if err != nil {
		return err
	}
	data, err := seal(ids, value)
	if err != nil {
		return fmt.Errorf("encrypt %s: %w", name, err)
	}
	if err := writeFile(s.path(name), data); err != nil {
		return fmt.Errorf("store secret %s: %w", name, err)
	}
	return nil
}

// Get returns the value of name; ErrNotFound when it is not stored.
func (s *Store) Get(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("secret %s: %w (expected %s)", name, ErrNotFound, s.path(name))
	}
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	ids, err := s.identities(false)
	if err != nil {
		return "", err
	}
	plain, err := unseal(ids, data)
	if err != nil {
		return "", fmt.Errorf("decrypt secret %s: %w", name, err)
	}
	return string(plain), nil
}

// List returns the names stored, sorted.
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), Ext); ok && !e.IsDir() && namePattern.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Remove deletes name; ErrNotFound when it is not stored.
func (s *Store) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	err := os.Remove(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	return err
}

// Rotate re-encrypts every secret, and the given extra encrypted files
// (such as .env.enc), to a new identity and then drops the old ones.
func (s *Store) Rotate(extra ...string) error {
	old, err := s.identities(false)
	if err != nil {
		return err
	}
	fresh, err := age.GenerateX25519Identity()
	if err != nil {
		return fmt.Errorf("generate age identity: %w", err)
	}
	both := append([]*age.X25519Identity{fresh}, old...)
	if err := writeKeys(s.key, both); err != nil {
		return err
	}
	names, err := s.List()
	if err != nil {
		return err
	}
	files := append([]string(nil), extra...)
	for _, n := range names {
		files = append(files, s.path(n))
	}
	for _, f := range files {
		if err := reseal(both, f); err != nil {
			return err
		}
	}
	return writeKeys(s.key, []*age.X25519Identity{fresh})
}

// reseal decrypts path with any identity and encrypts it to the first.
func reseal(ids []*age.X25519Identity, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	plain, err := unseal(ids, data)
	if err != nil {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	out, err := seal(ids, plain)
	if err != nil {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	return writeFile(path, out)
}

// EncryptFile encrypts plain into the file dst (the reference's .env.enc,
// here an age-armored dotenv file).
func (s *Store) EncryptFile(dst string, plain []byte) error {
	ids, err := s.identities(true)
	if err != nil {
		return err
	}
	data, err := seal(ids, plain)
	if err != nil {
		return fmt.Errorf("encrypt %s: %w", dst, err)
	}
	return writeFile(dst, data)
}

// DecryptFile returns the plain content of an encrypted file.
func (s *Store) DecryptFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ids, err := s.identities(false)
	if err != nil {
		return nil, err
	}
	plain, err := unseal(ids, data)
	if err != nil {
		return nil, fmt.Errorf("decrypt %s: %w", path, err)
	}
	return plain, nil
}
