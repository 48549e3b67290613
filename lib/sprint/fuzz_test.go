package sprint_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/sprint"
)

var errLineRe = regexp.MustCompile(`^f\.md(:[0-9]+)?: `)

// FuzzParse holds Parse to its contract on any input: no panic, an error
// that names the file and wraps ErrInvalid, or a spec whose every entry
// passes validation.
func FuzzParse(f *testing.F) {
	f.Add(billing)
	f.Add(file("- id: a\n  title: A\n  depends_on: [b]\n- id: b\n  title: B\n"))
	f.Add(file("- id: a\n  title: &x A\n  body: *x\n"))
	f.Add(file("```\n- id: a\n  title: \"q\\\"\"\n```\n"))
	f.Add("# Sprint: x\n## Vision issues\n#1\n<!-- filer:begin -->\n<!-- filer:end -->")
	f.Fuzz(func(t *testing.T, text string) {
		spec, err := sprint.Parse("f.md", []byte(text))
		if err != nil {
			if !errors.Is(err, sprint.ErrInvalid) || !errLineRe.MatchString(err.Error()) {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		if spec.Name == "" || spec.Vision <= 0 || len(spec.SubIssues) == 0 {
			t.Fatalf("accepted %+v", spec)
		}
		ids := map[string]bool{}
		for _, s := range spec.SubIssues {
			if s.ID == "" || ids[s.ID] || strings.TrimSpace(s.Title) == "" || strings.ContainsAny(s.Title, "\r\n") {
				t.Fatalf("accepted entry %+v", s)
			}
			ids[s.ID] = true
		}
		order := spec.Order()
		if len(order) != len(spec.SubIssues) {
			t.Fatalf("Order lost entries")
		}
		done := map[string]bool{}
		for _, s := range order {
			for _, d := range s.DependsOn {
				if !done[d] {
					t.Fatalf("%s before its dependency %s", s.ID, d)
				}
			}
			done[s.ID] = true
		}
	})
}
