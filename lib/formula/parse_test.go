package formula_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/lib/formula"
)

// Every validation rule has a fixture under testdata/invalid and the exact
// file:line message it must produce.
func TestParseInvalidFixtures(t *testing.T) {
	tests := []struct {
		file string
		want error
		msg  string
	}{
		{"unknown-key.toml", formula.ErrUnknownKey, `testdata/invalid/unknown-key.toml:13: steps[1].neds: unknown key "neds"`},
		{"unknown-table.toml", formula.ErrUnknownKey, `testdata/invalid/unknown-table.toml:5: project: unknown key "project"`},
		{"duplicate-step.toml", formula.ErrDuplicateStep, `testdata/invalid/duplicate-step.toml:11: steps[1].id: "build" is already the id of step 0`},
		{"unknown-need.toml", formula.ErrUnknownNeed, `testdata/invalid/unknown-need.toml:13: steps[1].needs: step "b" needs "c", which is not a step of this formula`},
		{"cycle.toml", formula.ErrCycle, `testdata/invalid/cycle.toml:8: steps[0].needs: step "a" is part of a needs cycle`},
		{"undeclared-var.toml", formula.ErrUndeclaredVar, `testdata/invalid/undeclared-var.toml:14: steps[0].description: {{destination}} has no [vars.destination] entry`},
		{"wrong-name.toml", formula.ErrInvalid, `testdata/invalid/wrong-name.toml:1: name: "something-else" does not match the file name "wrong-name"`},
		{"syntax.toml", formula.ErrSyntax, `testdata/invalid/syntax.toml:9: invalid escape in string '\d' (after key "steps.description")`},
		{"bad-type.toml", formula.ErrSyntax, `testdata/invalid/bad-type.toml:3: incompatible types: TOML value has type string; destination has type integer (after key "version")`},
		{"no-steps.toml", formula.ErrInvalid, `testdata/invalid/no-steps.toml: steps: at least one [[steps]] entry is required`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := formula.Parse(path, data)
			if err == nil {
				t.Fatalf("Parse accepted %s: %+v", tt.file, f)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v does not wrap %v", err, tt.want)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got: %s\nwant: %s", err, tt.msg)
			}
			p := formula.Problems(err)
			if len(p) != 1 {
				t.Errorf("got %d problems, want 1: %v", len(p), err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := `name = "many"
description = ""
version = 0
colour = "blue"

[[steps]]
id = "a"
title = "A"
description = "uses {{nope}}"
needs = ["z"]
`
	_, err := formula.Parse("many.toml", []byte(src))
	want := []string{
		`many.toml:4: colour: unknown key "colour"`,
		`many.toml:2: description: is required`,
		`many.toml:3: version: must be a positive integer`,
		`many.toml:10: steps[0].needs: step "a" needs "z", which is not a step of this formula`,
		`many.toml:9: steps[0].description: {{nope}} has no [vars.nope] entry`,
	}
	var got []string
	for _, p := range formula.Problems(err) {
		got = append(got, p.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems\n got: %q\nwant: %q", got, want)
	}
}

func TestParseValid(t *testing.T) {
	data, err := os.ReadFile("testdata/valid/sample.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Parse("testdata/valid/sample.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range f.Steps {
		ids = append(ids, s.ID)
	}
	if want := []string{"build", "test", "report"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("topological order %v, want %v", ids, want)
	}
	if f.Model != "sonnet" || f.Version != 2 || f.TimeoutMinutes != 15 || f.Timeout().Minutes() != 15 {
		t.Errorf("metadata: %+v", f)
	}
	if f.StackScript != "scripts/up.sh" || !reflect.DeepEqual(f.Tools, []string{"playwright"}) {
		t.Errorf("sidecar keys: %q %q", f.StackScript, f.Tools)
	}
	wantCtx := []formula.ContextFile{{Path: "AGENTS.md"}, {Ops: true, Path: "RESOURCES.md"}, {Path: "MISSING.md"}}
	if !reflect.DeepEqual(f.ContextFiles, wantCtx) {
		t.Errorf("context files %+v", f.ContextFiles)
	}
	if v, ok := f.Var("flags"); !ok || !v.HasDefault || v.Default != "-v" || v.Required {
		t.Errorf("var flags: %+v", v)
	}
	if v, _ := f.Var("target"); v.HasDefault || !v.Required {
		t.Errorf("var target: %+v", v)
	}
}

func TestLoadAll(t *testing.T) {
	fsys := fstest.MapFS{
		"good.toml": {Data: []byte("name = \"good\"\ndescription = \"d\"\nversion = 1\n[[steps]]\nid = \"a\"\ntitle = \"A\"\ndescription = \"x\"\n")},
		"bad.toml":  {Data: []byte("name = \"bad\"\n")},
		"notes.md":  {Data: []byte("ignored")},
	}
	fs, err := formula.LoadAll(fsys)
	if len(fs) != 1 || fs[0].Name != "good" {
		t.Errorf("valid formulas: %v", fs)
	}
	if len(formula.Problems(err)) != 3 {
		t.Errorf("want 3 problems of bad.toml, got %v", err)
	}
	if _, err := formula.Load(fsys, "absent"); !errors.Is(err, formula.ErrNotFound) {
		t.Errorf("Load(absent) = %v, want ErrNotFound", err)
	}
}
