package tomlpos_test

import (
	"reflect"
	"testing"

	"github.com/disinto/disinto/lib/tomlpos"
)

const sample = `# comment with [brackets] and key = value
name = "x"
description = """
[not.a.table]
neds = "inside a string"
"""
tools = [
  "a = b",
  "c",
]
"quoted key" = 1

[vars.target]
description = '''one line'''
required = true

[[steps]]  # first
id = "a"
description = """x"""

[[steps]]
id = "b"
needs = ["a"]
`

func TestLine(t *testing.T) {
	l := tomlpos.New(sample)
	tests := map[string]int{
		"name":                 2,
		"description":          3,
		"tools":                7,
		"quoted key":           11,
		"vars.target":          13,
		"vars.target.required": 15,
		"steps#0":              17,
		"steps#0.id":           18,
		"steps#1.needs":        23,
		"steps#1.missing":      21, // falls back to the table
		"steps":                17, // unnumbered: the first entry
		"steps.needs":          23,
		"vars.target.nope.x":   13,
		"not.a.table":          0,
		"neds":                 0,
		"":                     0,
	}
	for path, want := range tests {
		if got := l.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
}

func TestElementLine(t *testing.T) {
	l := tomlpos.New(sample)
	tests := []struct {
		i     int
		field string
		want  int
	}{
		{0, "", 17},
		{0, "description", 19},
		{1, "", 21},
		{1, "needs", 23},
		{1, "title", 21},
		{2, "id", 0},
	}
	for _, tt := range tests {
		if got := l.ElementLine("steps", tt.i, tt.field); got != tt.want {
			t.Errorf("ElementLine(steps, %d, %q) = %d, want %d", tt.i, tt.field, got, tt.want)
		}
	}
}

func TestKeys(t *testing.T) {
	l := tomlpos.New("a = 1\n[[t]]\nb = 2\n[[t]]\nb = 3\n")
	want := []tomlpos.Key{{"a", 1}, {"t#0", 2}, {"t#0.b", 3}, {"t#1", 4}, {"t#1.b", 5}}
	if got := l.Keys(); !reflect.DeepEqual(got, want) {
		t.Errorf("Keys() = %v, want %v", got, want)
	}
}

func TestOpensMultiline(t *testing.T) {
	l := tomlpos.New(sample)
	tests := map[int]bool{3: true, 14: false, 19: false, 0: false, 99: false}
	for n, want := range tests {
		if got := l.OpensMultiline(n); got != want {
			t.Errorf("OpensMultiline(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestPathForms(t *testing.T) {
	tests := []struct{ path, unnumbered, indexed string }{
		{"steps#12.needs", "steps.needs", "steps[12].needs"},
		{"steps#0", "steps", "steps[0]"},
		{"a.b", "a.b", "a.b"},
		{"x#1.y#2.z", "x.y.z", "x[1].y[2].z"},
	}
	for _, tt := range tests {
		if got := tomlpos.Unnumbered(tt.path); got != tt.unnumbered {
			t.Errorf("Unnumbered(%q) = %q, want %q", tt.path, got, tt.unnumbered)
		}
		if got := tomlpos.Indexed(tt.path); got != tt.indexed {
			t.Errorf("Indexed(%q) = %q, want %q", tt.path, got, tt.indexed)
		}
	}
	if got := tomlpos.Element("steps", 3); got != "steps#3" {
		t.Errorf("Element = %q", got)
	}
}
