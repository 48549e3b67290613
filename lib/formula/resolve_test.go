package formula_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/formula"
)

func formulaText(name string, version int) string {
	return fmt.Sprintf("name = %q\ndescription = \"d\"\nversion = %d\n[[steps]]\nid = \"a\"\ntitle = \"A\"\ndescription = \"x\"\n", name, version)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Versions tell the sources apart: embedded 1, ops 2, profile 3.
func TestResolveOrder(t *testing.T) {
	embedded := fstest.MapFS{
		"run-planner.toml": {Data: []byte(formulaText("run-planner", 1))},
		"review-pr.toml":   {Data: []byte(formulaText("review-pr", 1))},
	}
	tests := []struct {
		name        string
		profile     string // formula.toml content in the profile dir, "" for none
		ops         bool   // ops/formulas/run-planner.toml present
		wantKind    formula.SourceKind
		wantVersion int
	}{
		{"embedded only", "", false, formula.SourceEmbedded, 1},
		{"ops overrides embedded", "", true, formula.SourceOps, 2},
		{"profile overrides ops", formulaText("run-planner", 3), true, formula.SourceProfile, 3},
		{"profile overrides embedded", formulaText("run-planner", 3), false, formula.SourceProfile, 3},
		{"profile for another formula is ignored", formulaText("review-pr", 3), true, formula.SourceOps, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile, ops := t.TempDir(), t.TempDir()
			if tt.profile != "" {
				write(t, filepath.Join(profile, "formula.toml"), tt.profile)
			}
			if tt.ops {
				write(t, filepath.Join(ops, "formulas", "run-planner.toml"), formulaText("run-planner", 2))
			}
			var log bytes.Buffer
			r := formula.Resolver{Embedded: embedded, ProfileDir: profile, OpsDir: ops, Logger: zerolog.New(&log)}
			f, src, err := r.Resolve("run-planner")
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != tt.wantKind || f.Version != tt.wantVersion {
				t.Errorf("got %s version %d, want %s version %d", src, f.Version, tt.wantKind, tt.wantVersion)
			}
			if !strings.Contains(log.String(), `"source":"`+string(tt.wantKind)+`"`) {
				t.Errorf("chosen source not logged: %s", log.String())
			}
		})
	}
}

func TestResolveInvalidOverrideIsAnError(t *testing.T) {
	embedded := fstest.MapFS{"run-planner.toml": {Data: []byte(formulaText("run-planner", 1))}}
	profile, ops := t.TempDir(), t.TempDir()
	write(t, filepath.Join(profile, "formula.toml"), "colour = \"red\"\n"+formulaText("run-planner", 3))
	r := formula.Resolver{Embedded: embedded, ProfileDir: profile, OpsDir: ops, Logger: zerolog.Nop()}
	_, _, err := r.Resolve("run-planner")
	if !errors.Is(err, formula.ErrUnknownKey) {
		t.Fatalf("err = %v, want ErrUnknownKey", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(profile, "formula.toml")+":1: colour") {
		t.Errorf("error does not locate the override: %v", err)
	}

	// A profile file that is not TOML at all is an override attempt too.
	write(t, filepath.Join(profile, "formula.toml"), "name = \n")
	if _, _, err := r.Resolve("run-planner"); !errors.Is(err, formula.ErrSyntax) {
		t.Errorf("broken profile formula: %v", err)
	}

	// An ops override must be named after its file.
	os.Remove(filepath.Join(profile, "formula.toml"))
	write(t, filepath.Join(ops, "formulas", "run-planner.toml"), formulaText("planner", 2))
	if _, _, err := r.Resolve("run-planner"); !errors.Is(err, formula.ErrInvalid) {
		t.Errorf("misnamed ops formula: %v", err)
	}
}

func TestResolveNotFound(t *testing.T) {
	r := formula.Resolver{Embedded: fstest.MapFS{}, Logger: zerolog.Nop()}
	if _, _, err := r.Resolve("nope"); !errors.Is(err, formula.ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}
