// Package testguard reads a pull request's diff for changes that weaken
// its tests: test files deleted, tests deleted or renamed, skip markers
// added, assertions dropped. It is deterministic (regular expressions over
// the diff, one table of rules per language) so that a change which turns
// CI green by removing the tests that were red is refused whatever a
// review model says about it.
package testguard

import (
	"regexp"
	"strings"
)

// RuleKind is what a rule of the table recognises.
type RuleKind string

// The rule kinds: a test file (by its path), a test declaration (the
// test's name in the pattern's "name" group), a skip marker, an assertion.
const (
	RuleFile   RuleKind = "file"
	RuleTest   RuleKind = "test"
	RuleSkip   RuleKind = "skip"
	RuleAssert RuleKind = "assert"
)

// Rule is one row of the table: what pattern recognises a kind of thing
// in one language.
type Rule struct {
	Lang    string
	Kind    RuleKind
	Pattern *regexp.Regexp
}

// Rules is the table. A file belongs to the language whose RuleFile row
// matches its path (or, for Rust, whose tests also live beside the code,
// any .rs file); the other rows are matched against one line of it.
var Rules = []Rule{
	{"go", RuleFile, regexp.MustCompile(`_test\.go$`)},
	{"go", RuleTest, regexp.MustCompile(`^func\s+(?P<name>(?:Test|Fuzz|Example)\w*)\s*\(`)},
	{"go", RuleSkip, regexp.MustCompile(`\b\w+\.(?:Skip|Skipf|SkipNow)\(|\btesting\.Short\(\)`)},
	{"go", RuleAssert, regexp.MustCompile(`\b(?:t|b|f|tb|tt)\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|\b(?:assert|require)\.\w+\(`)},

	{"python", RuleFile, regexp.MustCompile(`(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$|(?:^|/)tests?/(?:[^/]+/)*[^/]+\.py$`)},
	{"python", RuleTest, regexp.MustCompile(`^\s*(?:async\s+)?def\s+(?P<name>test\w*)\s*\(`)},
	{"python", RuleSkip, regexp.MustCompile(`@pytest\.mark\.(?:skip|skipif|xfail)\b|@(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b|\bpytest\.(?:skip|xfail)\(|\bself\.skipTest\(`)},
	{"python", RuleAssert, regexp.MustCompile(`^\s*assert\b|\bself\.assert\w+\s*\(`)},

	{"js", RuleFile, regexp.MustCompile(`\.(?:test|spec)\.[cm]?[jt]sx?$|(?:^|/)__tests__/(?:[^/]+/)*[^/]+\.[cm]?[jt]sx?$`)},
	{"js", RuleTest, regexp.MustCompile("(?:^|[^\\w.$])(?:it|test|xit|xtest)(?:\\.(?:only|skip|todo|concurrent))?\\s*\\(\\s*(?:'(?P<name>[^']+)'|\"(?P<name>[^\"]+)\"|`(?P<name>[^`]+)`)")},
	{"js", RuleSkip, regexp.MustCompile(`\.skip\b|\b(?:it|test)\.todo\b|(?:^|[^\w.$])x(?:it|test|describe|context)\s*\(`)},
	{"js", RuleAssert, regexp.MustCompile(`\bexpect\s*\(|\bassert(?:\.\w+)?\s*\(`)},

	{"rust", RuleFile, regexp.MustCompile(`(?:^|/)tests/(?:[^/]+/)*[^/]+\.rs$`)},
	{"rust", RuleTest, regexp.MustCompile(`^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?fn\s+(?P<name>\w+)`)},
	{"rust", RuleSkip, regexp.MustCompile(`#\[ignore\b`)},
	{"rust", RuleAssert, regexp.MustCompile(`\b(?:debug_)?assert(?:_eq|_ne)?!\s*[(\[{]`)},
}

// rustTestAttr is the attribute that makes the next Rust fn a test
// (#[test], #[tokio::test], …): Rust's test row matches a fn only after it.
var rustTestAttr = regexp.MustCompile(`^\s*#\[(?:\w+::)*test\b`)

// language is the rows of one language, gathered.
type language struct {
	name                     string
	file, test, skip, assert *regexp.Regexp
	comment                  string // the line-comment prefix
	inline                   bool   // tests may live in any source file
	ext                      string // the extension of its source files
	funcStart                *regexp.Regexp
	needsAttr                bool // a test is a fn after rustTestAttr
}

// languages is Rules by language, with what the rows do not say: comment
// syntax, where tests live, what starts a function that is not a test.
var languages = func() []*language {
	extra := map[string]language{
		"go":     {comment: "//", funcStart: regexp.MustCompile(`^func\b`)},
		"python": {comment: "#", funcStart: regexp.MustCompile(`^(?: {0,4}|\t?)(?:async\s+)?def\s|^class\s`)},
		"js":     {comment: "//"},
		"rust":   {comment: "//", inline: true, ext: ".rs", needsAttr: true},
	}
	var out []*language
	byName := map[string]*language{}
	for _, r := range Rules {
		l, ok := byName[r.Lang]
		if !ok {
			e := extra[r.Lang]
			l = &e
			l.name = r.Lang
			byName[r.Lang] = l
			out = append(out, l)
		}
		switch r.Kind {
		case RuleFile:
			l.file = r.Pattern
		case RuleTest:
			l.test = r.Pattern
		case RuleSkip:
			l.skip = r.Pattern
		case RuleAssert:
			l.assert = r.Pattern
		}
	}
	return out
}()

// langOf returns the language of path and whether path is a test file;
// nil when no rule reads it.
func langOf(path string) (*language, bool) {
	if path == "" {
		return nil, false
	}
	for _, l := range languages {
		if l.file.MatchString(path) {
			return l, true
		}
	}
	for _, l := range languages {
		if l.inline && strings.HasSuffix(path, l.ext) {
			return l, false
		}
	}
	return nil, false
}

// testName returns the test a line declares, if any.
func (l *language) testName(line string) (string, bool) {
	m := l.test.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	for i, n := range l.test.SubexpNames() {
		if n == "name" && m[i] != "" {
			return m[i], true
		}
	}
	return "", false
}

// isComment reports whether a line is a comment only.
func (l *language) isComment(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), l.comment)
}
