package deps_test

import (
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/deps"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []int64
	}{
		// Acceptance vectors from the reference specification (00 §7).
		{"spec dependencies section", "## Dependencies\n- #12\n- #7\n## Notes\n#99", []int64{7, 12}},
		{"spec inline sentence", "Fix X.\n\nThis depends on #4 and #5.", []int64{4, 5}},
		{"spec fenced inline", "```\ndepends on #9\n```", nil},
		{"spec related section", "## Related\n- #3", nil},
		{"spec level 3 does not close", "## Depends on\n### detail\n#8", []int64{8}},
		{"spec hyphenated inline", "Depends-on: #6", []int64{6}},

		// Section headings.
		{"depends on heading", "## Depends on\n- #1\n- #2", []int64{1, 2}},
		{"depends-on heading", "## Depends-on\n- #3", []int64{3}},
		{"blocked by heading", "# Blocked by\n#4", []int64{4}},
		{"level 3 opener", "### Dependencies\n- #5", []int64{5}},
		{"level 4 is not an opener", "#### Dependencies\nsee #5 for context", nil},
		{"case-insensitive heading", "## DEPENDS ON\n- #6", []int64{6}},
		{"heading with colon", "## Dependencies:\n- #7", []int64{7}},
		{"heading with trailing text refs", "## Depends on #8 and #9", []int64{8, 9}},
		{"heading not at line start", "text ## Depends on\nsee #10", nil},
		{"heading needs a space", "##Depends on\nsee #10", nil},
		{"level 1 closes", "## Depends on\n- #1\n# Next\n#2", []int64{1}},
		{"level 3 opener closed by level 3", "### Depends on\n- #1\n### Notes\n#2", []int64{1}},
		{"level 2 under level 1 opener closes", "# Dependencies\n#1\n## Notes\n#2", []int64{1}},
		{"deep headings stay inside", "## Depends on\n#### sub #3\n- #4\n## End\n#5", []int64{3, 4}},
		{"nested opener keeps outer level", "## Depends on\n### Blocked by\n#1\n### detail\n#2\n## Notes\n#3", []int64{1, 2}},
		{"two sections", "## Depends on\n#1\n## Notes\n#2\n## Blocked by\n#3", []int64{1, 3}},
		{"related inside section is ignored", "## Depends on\n#1\n### Related\n#2\n### More\n#3", []int64{1, 3}},
		{"related ignores inline keywords", "## Related\n- #2 depends on #3", nil},
		{"related then section", "## Related\n#1\n## Dependencies\n#2", []int64{2}},
		{"section ends at eof", "## Dependencies\n- #1\n\n\n- #2", []int64{1, 2}},
		{"CRLF line endings", "## Dependencies\r\n- #11\r\n## Notes\r\n#12\r\n", []int64{11}},
		{"sorted unique", "## Dependencies\n- #9\n- #2\n- #9\ndepends on #2.", []int64{2, 9}},

		// Inline declarations.
		{"inline case-insensitive", "Depends on #5", []int64{5}},
		{"inline blocked by", "This is Blocked By #7.", []int64{7}},
		{"inline hyphen with spaces", "depends - on #7", []int64{7}},
		{"inline only after keyword", "Fixes #3; this depends on #4.", []int64{4}},
		{"inline stops at sentence end", "This depends on #4. See also #9.", []int64{4}},
		{"inline sentence end at question mark", "Blocked by #4? Maybe #5.", []int64{4}},
		{"inline dot inside word continues", "depends on v1.2 from #4", []int64{4}},
		{"inline several keywords", "Blocked by #1. Unrelated #2. Depends on #3", []int64{1, 3}},
		{"inline keyword needs word boundary", "undepends on #4", nil},
		{"inline keyword without refs", "This depends on the weather. #4 is unrelated.", nil},
		{"inline in a non-opener heading", "## Notes: depends on #5", []int64{5}},
		{"inline in a list item", "- depends on #6 and #7", []int64{6, 7}},
		{"inline in a quote", "> blocked by #8", []int64{8}},
		{"lead-in introduces a list", "**Depends on:**\n- #1\n- #2\n\nLater #3", []int64{1, 2}},
		{"lead-in with blank line before list", "Depends on:\n\n1. #4\n2) #5\nnot a list #6", []int64{4, 5}},
		{"lead-in without list", "Depends on:\nplain text #4", nil},

		// References that do not count.
		{"no deps at all", "Just a body mentioning #4.", nil},
		{"empty body", "", nil},
		{"cross-repo reference", "depends on other/repo#4", nil},
		{"html entity", "depends on &#39;#5&#39;", nil},
		{"suffix letters", "depends on #5a", nil},
		{"double hash", "depends on ##5", nil},
		{"zero", "depends on #0", nil},
		{"leading zeros", "depends on #007", []int64{7}},
		{"overflow", "depends on #99999999999999999999", nil},
		{"inline code span", "depends on `#4` and #5", []int64{5}},
		{"double backtick span", "depends on ``a ` #4`` and #5", []int64{5}},
		{"keyword inside code span", "see `depends on #4` here", nil},
		{"unmatched backtick is literal", "depends on ` #4", []int64{4}},
		{"section ref in code span", "## Dependencies\n- `#4`\n- #5", []int64{5}},

		// Fenced code.
		{"tilde fence", "~~~\ndepends on #9\n~~~\ndepends on #1", []int64{1}},
		{"fence with info string", "```go\n// depends on #9\n```", nil},
		{"longer fence needs longer close", "````\n```\ndepends on #9\n````\ndepends on #2", []int64{2}},
		{"different fence char does not close", "```\n~~~\ndepends on #9\n```\n#1 depends on #2", []int64{2}},
		{"unclosed fence hides the rest", "depends on #1\n```\ndepends on #9", []int64{1}},
		{"indented fence in list", "- item\n  ```\n  depends on #9\n  ```\n", nil},
		{"fence inside section", "## Dependencies\n```\n#9\n```\n- #3", []int64{3}},
		{"heading inside fence is ignored", "```\n## Depends on\n```\n#4", nil},
		{"inline triple backticks are not a fence", "depends on ```x``` #4", []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := deps.Parse(tt.body)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Parse(%q) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

func TestParseFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		self int64
		body string
		want []int64
	}{
		{"self dropped", 5, "## Depends on\n- #5\n- #6", []int64{6}},
		{"only self", 5, "depends on #5", nil},
		{"other issue kept", 1, "depends on #5", []int64{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := deps.ParseFor(tt.self, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("ParseFor(%d, %q) = %v, want %v", tt.self, tt.body, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"## Dependencies\n- #12\n- #7\n## Notes\n#99",
		"Fix X.\n\nThis depends on #4 and #5.",
		"```\ndepends on #9\n```",
		"## Related\n- #3",
		"## Depends on\n### detail\n#8",
		"Depends-on: #6",
		"**Blocked by:**\n- #1\n- #2",
		"depends on ``a ` #4`` and #5",
		"~~~~\n~~~\n#1\n~~~~",
		"depends on #99999999999999999999 #-1 #0",
		"\r\n#\r\n##\t\r\n### Depends on\r\n`",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := deps.Parse(body)
		for i, n := range got {
			if n <= 0 {
				t.Fatalf("Parse(%q) returned non-positive %d", body, n)
			}
			if i > 0 && got[i-1] >= n {
				t.Fatalf("Parse(%q) = %v, not sorted and unique", body, got)
			}
		}
		for _, n := range deps.ParseFor(7, body) {
			if n == 7 {
				t.Fatalf("ParseFor(7, %q) kept the self-reference", body)
			}
		}
	})
}
