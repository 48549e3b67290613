package formula

import "testing"

func TestLocator(t *testing.T) {
	src := `# comment with [brackets] and key = value
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
	l := newLocator(src)
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
		"not.a.table":          0,
		"neds":                 0,
	}
	for path, want := range tests {
		if got := l.line(path); got != want {
			t.Errorf("line(%q) = %d, want %d", path, got, want)
		}
	}
	if !l.opensMultiline(3) || l.opensMultiline(14) || l.opensMultiline(19) {
		t.Error("opensMultiline misjudges openers")
	}
	if got := indexed("steps#12.needs"); got != "steps[12].needs" {
		t.Errorf("indexed = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("name = \"fuzz\"\ndescription = \"d\"\nversion = 1\n[[steps]]\nid = \"a\"\ntitle = \"A\"\nneeds = [\"a\"]\ndescription = \"{{x}}\"\n"))
	f.Add([]byte("[[steps]]\n[[steps]]\nid = \"\"\n[vars.\"\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, err := Parse("fuzz.toml", data)
		if (fm == nil) == (err == nil) {
			t.Fatalf("Parse returned formula %v and error %v", fm, err)
		}
		if err != nil && len(Problems(err)) == 0 {
			t.Fatalf("error without problems: %v", err)
		}
	})
}
