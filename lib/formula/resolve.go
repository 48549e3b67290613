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
	// Logger receives the chosen source of every resolution.
	Logger zerolog.Logger
}

// ProfileFormulaFile is the override file in a .profile repository.
const ProfileFormulaFile = "formula.toml"

// Resolve returns the formula called name and where it came from.
func (r Resolver) Resolve(name string) (*Formula, Source, error) {
	if r.ProfileDir != "" {
		p := filepath.Join(r.ProfileDir, ProfileFormulaFile)
		data, err := os.ReadFile(p)
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
	if r.OpsDir != "" {
		p := filepath.Join(r.OpsDir, "formulas", name+".toml")
		data, err := os.ReadFile(p)
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
