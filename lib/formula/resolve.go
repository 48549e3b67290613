package formula

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"
)

// SourceKind says where a resolved formula came from.
type SourceKind string

// The sources, in the order Resolve tries them.
const (
	// SourceProfile: formula.toml in the agent's .profile repository.
	SourceProfile SourceKind = "profile"
	// SourceOps: formulas/<name>.toml in the project's ops repository.
	SourceOps SourceKind = "ops"
	// SourceEmbedded: the formula shipped in the binary.
	SourceEmbedded SourceKind = "embedded"
)

// Source is the origin of a resolved formula.
type Source struct {
	Kind SourceKind
	// Path is the file read (a path inside Embedded for SourceEmbedded).
	Path string
}

// String returns "kind:path".
func (s Source) String() string { return string(s.Kind) + ":" + s.Path }

// Resolver finds the formula an agent runs. An agent's own .profile
// repository may replace its formula with a formula.toml whose name is the
// formula's name; a project's ops repository may replace any formula with
// formulas/<name>.toml; otherwise the embedded default applies. Overrides
// are validated exactly like the defaults: an invalid override is an
// error, never silently ignored.
type Resolver struct {
	// Embedded holds the shipped formulas as <name>.toml at its root.
	Embedded fs.FS
	// ProfileDir is the checkout of the agent's .profile repository; ""
	// when the agent has none.
	ProfileDir string
	// OpsDir is the checkout of the project's ops repository; "" when
	// there is none.
	OpsDir string
	// Profile and Ops, when set, read the .profile and ops repositories
	// instead of ProfileDir and OpsDir (a managed checkout at one commit,
	// say).
	Profile, Ops *Tree
	// Logger receives the chosen source of every resolution.
	Logger zerolog.Logger
}

// ProfileFormulaFile is the override file in a .profile repository.
const ProfileFormulaFile = "formula.toml"

// Resolve returns the formula called name and where it came from.
func (r Resolver) Resolve(name string) (*Formula, Source, error) {
	if t := r.profile(); t != nil {
		p := t.path(ProfileFormulaFile)
		data, err := t.Read(ProfileFormulaFile)
		switch {
		case err == nil:
			if n, ok := declaredName(data); !ok || n == name {
				f, err := parse(p, data, name)
				if err != nil {
					return nil, Source{}, fmt.Errorf("profile override for %s: %w", name, err)
				}
				return r.chosen(f, Source{SourceProfile, p})
			}
			r.Logger.Debug().Str("formula", name).Str("path", p).Msg("profile formula is for another formula")
		case !errors.Is(err, fs.ErrNotExist):
			return nil, Source{}, fmt.Errorf("read profile formula: %w", err)
		}
	}
	if t := r.ops(); t != nil {
		rel := "formulas/" + name + ".toml"
		p := t.path(rel)
		data, err := t.Read(rel)
		switch {
		case err == nil:
			f, err := parse(p, data, name)
			if err != nil {
				return nil, Source{}, fmt.Errorf("ops override for %s: %w", name, err)
			}
			return r.chosen(f, Source{SourceOps, p})
		case !errors.Is(err, fs.ErrNotExist):
			return nil, Source{}, fmt.Errorf("read ops formula: %w", err)
		}
	}
	if r.Embedded == nil {
		return nil, Source{}, fmt.Errorf("resolve %s: %w", name, ErrNotFound)
	}
	f, err := Load(r.Embedded, name)
	if err != nil {
		return nil, Source{}, err
	}
	return r.chosen(f, Source{SourceEmbedded, name + ".toml"})
}

func (r Resolver) chosen(f *Formula, src Source) (*Formula, Source, error) {
	r.Logger.Info().Str("formula", f.Name).Int("version", f.Version).
		Str("source", string(src.Kind)).Str("path", src.Path).Msg("formula resolved")
	return f, src, nil
}

// declaredName reads only the name key, leniently, to decide whether a
// profile's formula.toml overrides the requested formula. A file too broken
// to read is treated as an override attempt so the strict parse reports it.
func declaredName(data []byte) (string, bool) {
	var head struct {
		Name string `toml:"name"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&head); err != nil {
		return "", false
	}
	return head.Name, true
}

// Tree is a repository's files as a resolver reads them.
type Tree struct {
	// Label names the tree in paths of messages ("dev-bot/.profile@1a2b3c4").
	Label string
	// Read returns a file by its slash-separated path; an error wrapping
	// fs.ErrNotExist when there is none.
	Read func(path string) ([]byte, error)
}

// path is how messages name rel in t.
func (t *Tree) path(rel string) string { return t.Label + "/" + rel }

// DirTree reads the checkout in dir.
func DirTree(dir string) *Tree {
	return &Tree{Label: dir, Read: func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel))) }}
}

func (r Resolver) profile() *Tree {
	if r.Profile != nil {
		return r.Profile
	}
	if r.ProfileDir != "" {
		return DirTree(r.ProfileDir)
	}
	return nil
}

func (r Resolver) ops() *Tree {
	if r.Ops != nil {
		return r.Ops
	}
	if r.OpsDir != "" {
		return DirTree(r.OpsDir)
	}
	return nil
}
