package testguard_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/testguard"
)

// hunk renders one file's change: lines start with ' ', '-' or '+'.
// section is what git shows after the hunk header.
func hunk(path, section string, lines ...string) string {
	oldN, newN := 0, 0
	for _, l := range lines {
		switch l[0] {
		case ' ':
			oldN++
			newN++
		case '-':
			oldN++
		case '+':
			newN++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	fmt.Fprintf(&b, "@@ -10,%d +10,%d @@", oldN, newN)
	if section != "" {
		b.WriteString(" " + section)
	}
	b.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	return b.String()
}

// deleted renders the deletion of a file with lines.
func deleted(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/%s\n+++ /dev/null\n@@ -1,%d +0,0 @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("-" + l + "\n")
	}
	return b.String()
}

// brief is a finding as the table states it: kind and name.
func brief(f testguard.Finding) string {
	switch f.Kind {
	case testguard.DeletedFile:
		return fmt.Sprintf("%s %s %v", f.Kind, f.File, f.Tests)
	case testguard.AddedSkip:
		return fmt.Sprintf("%s %s %s", f.Kind, f.Test, f.Marker)
	case testguard.FewerAssertions:
		return fmt.Sprintf("%s %s %d>%d", f.Kind, f.Test, f.Removed, f.Added)
	}
	return fmt.Sprintf("%s %s", f.Kind, f.Test)
}

type ruleCase struct {
	lang string
	rule testguard.RuleKind
	pos  bool // a positive case: the rule must report
	name string
	diff string
	want []string
}

var ruleCases = []ruleCase{
	// Go.
	{"go", testguard.RuleFile, true, "test file deleted", deleted("parse_test.go", "package parse", "func TestParse(t *testing.T) {", "}"),
		[]string{"deleted-test-file parse_test.go [TestParse]"}},
	{"go", testguard.RuleFile, false, "code file deleted", deleted("parse.go", "package parse", "func Parse() {}"), nil},
	{"go", testguard.RuleTest, true, "test function deleted", hunk("parse_test.go", "", " }", "-func TestParse(t *testing.T) {", "-\tif Parse() != 1 {", "-\t\tt.Fatal(\"no\")", "-\t}", "-}"),
		[]string{"deleted-test TestParse"}},
	{"go", testguard.RuleTest, false, "helper deleted and test moved to another file",
		hunk("a_test.go", "", "-func helper() int { return 1 }", "-func TestParse(t *testing.T) {}") + hunk("b_test.go", "", "+func TestParse(t *testing.T) {}"), nil},
	{"go", testguard.RuleSkip, true, "t.Skip added", hunk("parse_test.go", "func TestParse(t *testing.T) {", "+\tt.Skip(\"flaky\")", " \tif Parse() != 1 {"),
		[]string{`added-skip TestParse t.Skip("flaky")`}},
	{"go", testguard.RuleSkip, true, "testing.Short guard added", hunk("parse_test.go", "func TestParse(t *testing.T) {", "+\tif testing.Short() {", "+\t\treturn", "+\t}"),
		[]string{`added-skip TestParse if testing.Short() {`}},
	{"go", testguard.RuleSkip, false, "skip moved, log added", hunk("parse_test.go", "func TestParse(t *testing.T) {", "-\tt.Skip(\"slow\")", " \tx := 1", "+\tt.Skip(\"slow\")", "+\tt.Log(x)"), nil},
	{"go", testguard.RuleAssert, true, "Fatalf turned into Logf", hunk("parse_test.go", "func TestParse(t *testing.T) {", "-\t\tt.Fatalf(\"got %d\", n)", "+\t\tt.Logf(\"got %d\", n)"),
		[]string{"fewer-assertions TestParse 1>0"}},
	{"go", testguard.RuleAssert, true, "assertion commented out", hunk("parse_test.go", "func TestParse(t *testing.T) {", "-\trequire.Equal(t, 1, n)", "+\t// require.Equal(t, 1, n)"),
		[]string{"fewer-assertions TestParse 1>0"}},
	{"go", testguard.RuleAssert, false, "assertion reworded, err.Error() removed", hunk("parse_test.go", "func TestParse(t *testing.T) {", "-\t\tt.Fatalf(\"got %d\", n)", "-\tmsg := err.Error()", "+\t\tt.Errorf(\"parse: got %d\", n)"), nil},

	// Python.
	{"python", testguard.RuleFile, true, "test module deleted", deleted("tests/test_parse.py", "def test_parse():", "    assert parse('1') == 1"),
		[]string{"deleted-test-file tests/test_parse.py [test_parse]"}},
	{"python", testguard.RuleFile, false, "module deleted", deleted("pkg/parse.py", "def parse(s):", "    return int(s)"), nil},
	{"python", testguard.RuleTest, true, "test deleted", hunk("test_parse.py", "", "-def test_parse():", "-    assert parse('1') == 1", " ", " def test_other():"),
		[]string{"deleted-test test_parse"}},
	{"python", testguard.RuleTest, false, "helper deleted", hunk("test_parse.py", "", "-def make():", "-    return 1", " ", " def test_other():"), nil},
	{"python", testguard.RuleSkip, true, "pytest skip added", hunk("test_parse.py", "", "+@pytest.mark.skip(reason=\"flaky\")", " def test_parse():"),
		[]string{`added-skip  @pytest.mark.skip(reason="flaky")`}},
	{"python", testguard.RuleSkip, true, "unittest skip added", hunk("tests/parse_test.py", "class TestParse(unittest.TestCase):", "+    @unittest.skip(\"later\")", "     def test_parse(self):"),
		[]string{`added-skip  @unittest.skip("later")`}},
	{"python", testguard.RuleSkip, false, "fixture added", hunk("test_parse.py", "", "+@pytest.fixture", " def data():"), nil},
	{"python", testguard.RuleAssert, true, "assert dropped", hunk("test_parse.py", "def test_parse():", "-    assert parse('1') == 1", "+    parse('1')"),
		[]string{"fewer-assertions test_parse 1>0"}},
	{"python", testguard.RuleAssert, true, "self.assertEqual dropped", hunk("tests/test_parse.py", "class TestParse(unittest.TestCase):", "     def test_parse(self):", "-        self.assertEqual(parse('1'), 1)", "+        parse('1')"),
		[]string{"fewer-assertions test_parse 1>0"}},
	{"python", testguard.RuleAssert, false, "assert changed", hunk("test_parse.py", "def test_parse():", "-    assert parse('1') == 1", "+    assert parse('1') == 2"), nil},

	// JavaScript and TypeScript.
	{"js", testguard.RuleFile, true, "spec deleted", deleted("src/parse.test.ts", "it('parses numbers', () => {", "  expect(parse('1')).toBe(1)", "})"),
		[]string{"deleted-test-file src/parse.test.ts [parses numbers]"}},
	{"js", testguard.RuleFile, false, "source deleted", deleted("src/parse.ts", "export const parse = (s) => Number(s)"), nil},
	{"js", testguard.RuleTest, true, "test case deleted", hunk("src/__tests__/parse.js", "", "-test(\"parses numbers\", () => {", "-  expect(parse('1')).toBe(1)", "-})"),
		[]string{"deleted-test parses numbers"}},
	{"js", testguard.RuleTest, false, "test body changed", hunk("src/parse.spec.tsx", "", "-  it(`parses numbers`, () => {", "+  it(`parses numbers`, async () => {"), nil},
	{"js", testguard.RuleSkip, true, "it.skip", hunk("src/parse.test.js", "", "-it('parses numbers', () => {", "+it.skip('parses numbers', () => {"),
		[]string{`added-skip parses numbers it.skip('parses numbers', () => {`}},
	{"js", testguard.RuleSkip, true, "xdescribe", hunk("src/parse.test.js", "", "-describe('parse', () => {", "+xdescribe('parse', () => {"),
		[]string{`added-skip  xdescribe('parse', () => {`}},
	{"js", testguard.RuleSkip, true, "test.todo", hunk("src/parse.test.js", "", "+test.todo('parses hex')"),
		[]string{`added-skip parses hex test.todo('parses hex')`}},
	{"js", testguard.RuleSkip, false, "a variable named skipped", hunk("src/parse.test.js", "", "+const skipped = []", "+describe('parse', () => {"), nil},
	{"js", testguard.RuleAssert, true, "expect dropped", hunk("src/parse.test.js", "", " it('parses', () => {", "-  expect(parse('1')).toBe(1)", "+  parse('1')", " })"),
		[]string{"fewer-assertions parses 1>0"}},
	{"js", testguard.RuleAssert, false, "matcher changed", hunk("src/parse.test.js", "", " it('parses', () => {", "-  expect(parse('1')).toBe(1)", "+  expect(parse('1')).toEqual(1)", " })"), nil},

	// Rust.
	{"rust", testguard.RuleFile, true, "integration test deleted", deleted("tests/parse.rs", "#[test]", "fn parses() {", "    assert_eq!(parse(\"1\"), 1);", "}"),
		[]string{"deleted-test-file tests/parse.rs [parses]"}},
	{"rust", testguard.RuleFile, false, "module without tests deleted", deleted("src/util.rs", "pub fn one() -> i32 {", "    1", "}"), nil},
	{"rust", testguard.RuleTest, true, "inline test deleted", hunk("src/lib.rs", "mod tests {", "-    #[test]", "-    fn parses() {", "-        assert_eq!(parse(\"1\"), 1);", "-    }"),
		[]string{"deleted-test parses"}},
	{"rust", testguard.RuleTest, false, "function deleted", hunk("src/lib.rs", "", "-fn helper() -> i32 {", "-    assert!(true);", "-    1", "-}"), nil},
	{"rust", testguard.RuleSkip, true, "ignore added", hunk("src/lib.rs", "mod tests {", "     #[test]", "+    #[ignore]", "     fn parses() {"),
		[]string{`added-skip  #[ignore]`}},
	{"rust", testguard.RuleSkip, false, "should_panic added", hunk("src/lib.rs", "mod tests {", "     #[test]", "+    #[should_panic]", "     fn parses() {"), nil},
	{"rust", testguard.RuleAssert, true, "assert_eq dropped", hunk("tests/parse.rs", "fn parses() {", "-    assert_eq!(parse(\"1\"), 1);", "+    let _ = parse(\"1\");"),
		[]string{"fewer-assertions parses 1>0"}},
	{"rust", testguard.RuleAssert, false, "assert_eq made assert", hunk("src/lib.rs", "", " #[test]", " fn parses() {", "-    assert_eq!(parse(\"1\"), 1);", "+    assert!(parse(\"1\") == 1);"), nil},
}

// TestRules runs the table: every rule of every language with a positive
// and a negative case.
func TestRules(t *testing.T) {
	covered := map[string]map[bool]bool{}
	for _, c := range ruleCases {
		id := c.lang + "/" + string(c.rule)
		if covered[id] == nil {
			covered[id] = map[bool]bool{}
		}
		covered[id][c.pos] = true
		t.Run(id+"/"+c.name, func(t *testing.T) {
			if c.pos != (len(c.want) > 0) {
				t.Fatal("a positive case wants findings, a negative one none")
			}
			var got []string
			for _, f := range testguard.Check(c.diff) {
				got = append(got, brief(f))
				if f.Lang != c.lang {
					t.Errorf("finding of language %q, want %q", f.Lang, c.lang)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("findings:\n got %q\nwant %q", got, c.want)
			}
		})
	}
	for _, r := range testguard.Rules {
		id := r.Lang + "/" + string(r.Kind)
		if !covered[id][true] || !covered[id][false] {
			t.Errorf("rule %s lacks a positive or a negative case", id)
		}
	}
}

func TestCheckLines(t *testing.T) {
	diff := hunk("parse_test.go", "func TestParse(t *testing.T) {", " \tn := Parse()", "-\tif n != 1 {", "-\t\tt.Fatal(n)", "-\t}", "+\tt.Skip(\"later\")") +
		deleted("old_test.go", "func TestOld(t *testing.T) {}")
	got := testguard.Check(diff)
	want := []testguard.Finding{
		{Kind: testguard.DeletedFile, Lang: "go", File: "old_test.go", Tests: []string{"TestOld"}},
		{Kind: testguard.AddedSkip, Lang: "go", File: "parse_test.go", Test: "TestParse", Marker: `t.Skip("later")`, Line: 11},
		{Kind: testguard.FewerAssertions, Lang: "go", File: "parse_test.go", Test: "TestParse", Line: 12, Removed: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Check:\n got %+v\nwant %+v", got, want)
	}
}

func TestRenamedTestFile(t *testing.T) {
	renamed := "diff --git a/parse_test.go b/parse_test.go.off\nsimilarity index 100%\nrename from parse_test.go\nrename to parse_test.go.off\n"
	if got := testguard.Check(renamed); len(got) != 1 || got[0].Kind != testguard.DeletedFile {
		t.Errorf("a test file renamed out of the tests: %+v", got)
	}
	moved := "diff --git a/parse_test.go b/internal/parse_test.go\nsimilarity index 100%\nrename from parse_test.go\nrename to internal/parse_test.go\n"
	if got := testguard.Check(moved); len(got) != 0 {
		t.Errorf("a test file moved: %+v", got)
	}
	renamedTest := hunk("parse_test.go", "", "-func TestParse(t *testing.T) {", "+func TestParseLater(t *testing.T) {")
	if got := testguard.Check(renamedTest); len(got) != 1 || got[0].Kind != testguard.DeletedTest || got[0].Test != "TestParse" {
		t.Errorf("a renamed test: %+v", got)
	}
}

func TestExcused(t *testing.T) {
	del := testguard.Finding{Kind: testguard.DeletedTest, Lang: "go", File: "pkg/parse_test.go", Test: "TestParse"}
	file := testguard.Finding{Kind: testguard.DeletedFile, Lang: "go", File: "pkg/legacy_test.go", Tests: []string{"TestLegacy"}}
	tests := []struct {
		name  string
		f     testguard.Finding
		issue string
		want  bool
	}{
		{"asks to remove the test", del, "Cleanup\n\nRemove TestParse: it tests the old parser.", true},
		{"asks to skip it, another case", del, "please SKIP testparse until the fix lands", true},
		{"names the failing test only", del, "Parse is broken\n\nTestParse fails on input 1. Fix Parse.", false},
		{"asks to remove another test", del, "Remove TestParseAll.", false},
		{"name and verb on different lines", del, "TestParse is obsolete\n\n", true},
		{"verb on another line", del, "TestParse is wrong\nRemove the old code.", false},
		{"deleted file by base name", file, "Delete legacy_test.go with the legacy code.", true},
		{"deleted file by path", file, "drop pkg/legacy_test.go", true},
		{"deleted file, test named only", file, "TestLegacy fails", false},
		{"no issue", del, "", false},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			if got := testguard.Excused(c.f, c.issue); got != c.want {
				t.Errorf("Excused = %v, want %v", got, c.want)
			}
		})
	}
	if got := testguard.Standing([]testguard.Finding{del, file}, "Remove TestParse."); len(got) != 1 || got[0].Kind != testguard.DeletedFile {
		t.Errorf("Standing: %+v", got)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		f    testguard.Finding
		want string
	}{
		{testguard.Finding{Kind: testguard.DeletedFile, File: "a_test.go", Tests: []string{"TestA", "TestB"}}, "test file `a_test.go` deleted, with its tests `TestA`, `TestB`"},
		{testguard.Finding{Kind: testguard.DeletedTest, File: "a_test.go", Test: "TestA", Line: 3}, "test `TestA` deleted or renamed (was at `a_test.go:3`)"},
		{testguard.Finding{Kind: testguard.AddedSkip, File: "a.test.js", Test: "a `b`", Marker: "it.skip(`a`)", Line: 9}, "skip marker `it.skip('a')` added at `a.test.js:9` in test `a 'b'`"},
		{testguard.Finding{Kind: testguard.FewerAssertions, File: "t.py", Line: 4, Removed: 2, Added: 1}, "test file `t.py` has fewer assertions: 2 removed, 1 added (first removed at `t.py:4`)"},
	}
	for _, c := range tests {
		if got := testguard.Describe(c.f); got != c.want {
			t.Errorf("Describe:\n got %s\nwant %s", got, c.want)
		}
	}
}
