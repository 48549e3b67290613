package sprint_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/sprint"
)

// billing is the sprint file of spec 50 §6.10.
const billing = `# Sprint: Add billing

## Vision issues
- #5 — Add billing

## What this enables
Invoices.

## Sub-issues
<!-- filer:begin -->
- id: schema
  title: vision(#5): billing schema
  labels: [backlog]
  depends_on: []
  body: |
    ## Goal
    A schema.

    ## Acceptance criteria
    - [ ] tables exist
- id: api
  title: "Use \"strict\" mode"
  labels: [backlog]
  depends_on: [schema]
  body: |
    ## Goal
    An API on #12.
<!-- filer:end -->
`

func TestParseBilling(t *testing.T) {
	t.Parallel()
	spec, err := sprint.Parse("sprints/add-billing.md", []byte(billing))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "Add billing" || spec.Vision != 5 || spec.Slug != "add-billing" {
		t.Fatalf("name %q vision %d slug %q", spec.Name, spec.Vision, spec.Slug)
	}
	if string(spec.Text) != billing {
		t.Fatal("Text is not the file")
	}
	want := []sprint.SubIssue{
		{ID: "schema", Title: "vision(#5): billing schema", Labels: []string{"backlog"},
			Body: "## Goal\nA schema.\n\n## Acceptance criteria\n- [ ] tables exist"},
		{ID: "api", Title: `Use "strict" mode`, Labels: []string{"backlog"}, DependsOn: []string{"schema"},
			Body: "## Goal\nAn API on #12."},
	}
	if len(spec.SubIssues) != len(want) {
		t.Fatalf("got %d sub-issues", len(spec.SubIssues))
	}
	for i, w := range want {
		g := spec.SubIssues[i]
		if g.ID != w.ID || g.Title != w.Title || g.Body != w.Body ||
			!slices.Equal(g.Labels, w.Labels) || !slices.Equal(g.DependsOn, w.DependsOn) {
			t.Errorf("sub-issue %d = %+v\nwant %+v", i, g, w)
		}
	}
}

func TestParseTitles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{`title: plain words`, "plain words"},
		{`title: Fix #5 and #6`, "Fix #5 and #6"},
		{`title: vision(#5): colon: more`, "vision(#5): colon: more"},
		{`title: "Use \"strict\" mode"`, `Use "strict" mode`},
		{`title: 'single ''quoted'''`, "single 'quoted'"},
		{`title: back\slash and "quotes" inside`, `back\slash and "quotes" inside`},
		{`title: trailing spaces   `, "trailing spaces"},
		{`title: ünïcode — dash`, "ünïcode — dash"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			spec, err := sprint.Parse("x.md", []byte(file("- id: a\n  "+tc.line+"\n")))
			if err != nil {
				t.Fatal(err)
			}
			if got := spec.SubIssues[0].Title; got != tc.want {
				t.Fatalf("title %q, want %q", got, tc.want)
			}
		})
	}
}

// file wraps a block in a minimal valid sprint file; the block starts at
// line 6.
func file(block string) string {
	return "# Sprint: S\n\n## Vision issues\n- #7 — v\n<!-- filer:begin -->\n" + block + "<!-- filer:end -->\n"
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no heading", "## Vision issues\n- #1\n", "s.md:1: no \"# Sprint: <name>\" heading"},
		{"empty name", "# Sprint:   \n", "s.md:1: the \"# Sprint:\" heading has no name"},
		{"no vision section", "# Sprint: S\n- #5\n", `s.md:1: no "## Vision issues" section`},
		{"vision section without issue", "# Sprint: S\n## Vision issues\nnone\n## Next\n- #5\n", "s.md:2: the \"## Vision issues\" section names no issue"},
		{"no block", "# Sprint: S\n## Vision issues\n- #5\n", "s.md: no sub-issue block"},
		{"begin without end", "# Sprint: S\n## Vision issues\n- #5\n<!-- filer:begin -->\n", "s.md:4: <!-- filer:begin --> without <!-- filer:end -->"},
		{"end before begin", "# Sprint: S\n## Vision issues\n- #5\n<!-- filer:end -->\n", "s.md:4: <!-- filer:end --> before"},
		{"two blocks", file("- id: a\n  title: A\n") + "<!-- filer:begin -->\n", "s.md:9: a second <!-- filer:begin --> (the first is at line 5)"},
		{"empty block", file("\n\n"), "s.md:5: the sub-issue block is empty"},
		{"not a list", file("id: a\ntitle: A\n"), "s.md:6: the sub-issue block must be a YAML list"},
		{"entry not a mapping", file("- just text\n"), "s.md:6: sub-issue 1: want a mapping"},
		{"missing title names the entry", file("- id: a\n  title: A\n- id: b\n  labels: [backlog]\n"), `s.md:8: sub-issue 2 (id "b"): no title`},
		{"missing id", file("- title: A\n"), "s.md:6: sub-issue 1: no id"},
		{"bad id", file("- id: Has Space\n  title: A\n"), `s.md:6: sub-issue 1: id "Has Space": want [a-z0-9-]+`},
		{"empty title", file("- id: a\n  title: \"  \"\n"), `s.md:7: sub-issue 1 (id "a"): empty title`},
		{"unknown key", file("- id: a\n  title: A\n  priority: high\n"), `s.md:8: sub-issue 1 (id "a"): unknown key "priority"`},
		{"repeated key", file("- id: a\n  title: A\n  title: B\n"), `s.md:8: sub-issue 1 (id "a"): key "title" is also set at line 2`},
		{"duplicate id", file("- id: a\n  title: A\n- id: a\n  title: B\n"), `s.md:8: sub-issue 2 (id "a"): id "a" is also used at line 6`},
		{"unknown label", file("- id: a\n  title: A\n  labels: [backlog, shiny]\n"), `s.md:8: sub-issue 1 (id "a"): label "shiny": not in the label registry`},
		{"state label", file("- id: a\n  title: A\n  labels: [vision]\n"), `s.md:8: sub-issue 1 (id "a"): label "vision": a sub-issue may carry only backlog, priority, tech-debt, underspecified`},
		{"labels not a list", file("- id: a\n  title: A\n  labels: backlog\n"), `s.md:8: sub-issue 1 (id "a"): labels: want a list`},
		{"dependency outside the block", file("- id: a\n  title: A\n  depends_on: [zz]\n"), `s.md:6: sub-issue 1 (id "a"): depends_on "zz" is no entry of this block`},
		{"self dependency", file("- id: a\n  title: A\n  depends_on: [a]\n"), `s.md:8: sub-issue 1 (id "a"): depends on itself`},
		{"cycle", file("- id: a\n  title: A\n  depends_on: [b]\n- id: b\n  title: B\n  depends_on: [a]\n"), "s.md:6: depends_on cycle: a -> b -> a"},
		{"yaml syntax", file("- id: a\n  title: A\n  body: |\n    x\n   - bad: [\n"), "s.md:9: sub-issue block: did not find expected key"},
		{"two documents", file("- id: a\n  title: A\n---\n- id: b\n  title: B\n"), "more than one YAML document"},
		{"alias", file("- id: a\n  title: &t A\n- id: b\n  title: *t\n"), "aliases are not allowed"},
		{"quoted title cut by comment", file("- id: a\n  title: \"A\" # note\n"), "quote the title"},
		{"multi-line title", file("- id: a\n  title: \"A\\nB\"\n"), "more than one line"},
		{"body is a list", file("- id: a\n  title: A\n  body: [x]\n"), "body: want a single value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := sprint.Parse("s.md", []byte(tc.text))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, sprint.ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseTolerates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text string }{
		{"crlf", strings.ReplaceAll(file("- id: a\n  title: A\n"), "\n", "\r\n")},
		{"fenced block", file("```yaml\n- id: a\n  title: A\n```\n")},
		{"marker with text", "# Sprint: S\n## Vision issues\n- #7\nSee: <!-- filer:begin -->\n- id: a\n  title: A\n<!-- filer:end --> end\n"},
		{"null lists and body", file("- id: a\n  title: A\n  labels:\n  depends_on:\n  body:\n")},
		{"block style lists", file("- id: a\n  title: A\n- id: b\n  title: B\n  labels:\n    - backlog\n  depends_on:\n    - a\n")},
		{"second sprint heading", "# Sprint: S\n\n# Sprint: S again\n## Vision issues\n- #7 — v\n<!-- filer:begin -->\n- id: a\n  title: A\n<!-- filer:end -->\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := sprint.Parse("s.md", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if spec.Name != "S" || spec.Vision != 7 || spec.SubIssues[0].ID != "a" || spec.SubIssues[0].Title != "A" {
				t.Fatalf("%+v", spec)
			}
		})
	}
}

// A body line that looks like a title line is body text, not a title.
func TestParseBodyKeepsTitleLookalikes(t *testing.T) {
	t.Parallel()
	spec, err := sprint.Parse("s.md", []byte(file("- id: a\n  title: A\n  body: |\n    title: not a key\n\n      - title: nested\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.SubIssues[0].Body, "title: not a key\n\n  - title: nested"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	_, err := sprint.Parse("s.md", make([]byte, sprint.MaxFileSize+1))
	if !errors.Is(err, sprint.ErrInvalid) || !strings.Contains(err.Error(), "s.md: file is") {
		t.Fatalf("err = %v", err)
	}
}

func TestOrder(t *testing.T) {
	t.Parallel()
	spec, err := sprint.Parse("s.md", []byte(file(`- id: ui
  title: UI
  depends_on: [api, schema]
- id: api
  title: API
  depends_on: [schema]
- id: docs
  title: Docs
- id: schema
  title: Schema
`)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spec.Order() {
		got = append(got, s.ID)
	}
	if want := []string{"docs", "schema", "api", "ui"}; !slices.Equal(got, want) {
		t.Fatalf("Order = %v, want %v", got, want)
	}
}
