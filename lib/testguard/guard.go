package testguard

import (
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/patch"
)

// Kind is what a finding reports.
type Kind string

// The kinds of findings.
const (
	// DeletedFile: a test file is deleted, or renamed to a name no rule
	// reads as a test file.
	DeletedFile Kind = "deleted-test-file"
	// DeletedTest: a test's declaration is removed and no file of the
	// change declares a test of that name (a rename reports the old name;
	// a test moved to another file is no finding).
	DeletedTest Kind = "deleted-test"
	// AddedSkip: an added line carries a skip marker that the change did
	// not merely move.
	AddedSkip Kind = "added-skip"
	// FewerAssertions: a test that still exists (or, outside any test, a
	// test file) has fewer assertions than before.
	FewerAssertions Kind = "fewer-assertions"
)

// Finding is one way a change weakens its tests.
type Finding struct {
	Kind Kind
	Lang string
	// File is the test file: the old path for a deleted file.
	File string
	// Test is the test's name; "" when the line is outside any test the
	// diff shows.
	Test string
	// Marker is the added skip line, trimmed (AddedSkip).
	Marker string
	// Line is the line in the new file for an added skip, in the old file
	// otherwise (the first assertion removed, the deleted declaration);
	// 0 for a deleted file.
	Line int
	// Removed and Added count the assertions of the test that the change
	// removed and added (FewerAssertions).
	Removed, Added int
	// Tests are the tests a deleted file declared, as far as the diff
	// shows them (DeletedFile).
	Tests []string
}

// key names the assertions of one test (or of a file, outside tests).
type key struct{ file, test string }

// count is assertions removed and added, and where the first removal was.
type count struct{ removed, added, line int }

// decl is where a test is declared.
type decl struct {
	lang, name, file string
	line             int
}

// check gathers what a diff does to tests across its files.
type check struct {
	out      []Finding
	removed  []decl                     // declarations on removed lines
	added    map[string]map[string]bool // lang → names declared on added lines
	asserts  map[key]*count
	keyOrder []key
	keyLang  map[key]string
}

// Check reads a unified diff (git format, as the forge serves a pull
// request's) and returns what it does to tests, sorted by file and line.
func Check(diff string) []Finding {
	c := &check{added: map[string]map[string]bool{}, asserts: map[key]*count{}, keyLang: map[key]string{}}
	for _, f := range patch.Parse(diff) {
		c.file(f)
	}
	deleted := map[string]map[string]bool{}
	for _, d := range c.removed {
		if c.added[d.lang][d.name] {
			continue
		}
		if deleted[d.lang] == nil {
			deleted[d.lang] = map[string]bool{}
		}
		if deleted[d.lang][d.name] {
			continue
		}
		deleted[d.lang][d.name] = true
		c.out = append(c.out, Finding{Kind: DeletedTest, Lang: d.lang, File: d.file, Test: d.name, Line: d.line})
	}
	for _, k := range c.keyOrder {
		n := c.asserts[k]
		lang := c.keyLang[k]
		if n.added >= n.removed || (k.test != "" && deleted[lang][k.test]) {
			continue
		}
		c.out = append(c.out, Finding{Kind: FewerAssertions, Lang: lang, File: k.file, Test: k.test,
			Line: n.line, Removed: n.removed, Added: n.added})
	}
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].File != c.out[j].File {
			return c.out[i].File < c.out[j].File
		}
		return c.out[i].Line < c.out[j].Line
	})
	return c.out
}

// file reads one file's change.
func (c *check) file(f patch.File) {
	oldLang, oldTest := langOf(f.Old)
	newLang, newTest := langOf(f.New)
	if f.Copied {
		oldLang, oldTest = nil, false
	}
	if oldTest && !newTest {
		// Deleted, or renamed out of the test files: its tests go with it.
		fd := Finding{Kind: DeletedFile, Lang: oldLang.name, File: f.Old}
		for _, h := range f.Hunks {
			var s side
			s.start(oldLang, h.Section, true)
			for _, l := range h.Lines {
				if l.Op == patch.Remove {
					if name, ok := s.line(oldLang, l.Text); ok {
						fd.Tests = append(fd.Tests, name)
					}
				}
			}
		}
		c.out = append(c.out, fd)
		return
	}
	lang, isTest := newLang, newTest
	if lang == nil {
		lang, isTest = oldLang, oldTest
	}
	if lang == nil {
		return
	}
	path := f.New
	if path == "" {
		path = f.Old
	}
	var movedSkips []string
	type addedSkip struct {
		text, test string
		line       int
	}
	var skips []addedSkip
	for _, h := range f.Hunks {
		var olds, news side
		olds.start(lang, h.Section, isTest)
		news.start(lang, h.Section, isTest)
		for _, l := range h.Lines {
			if l.Op != patch.Add {
				if name, ok := olds.line(lang, l.Text); ok && l.Op == patch.Remove {
					c.removed = append(c.removed, decl{lang: lang.name, name: name, file: path, line: l.Old})
				}
			}
			if l.Op != patch.Remove {
				if name, ok := news.line(lang, l.Text); ok && l.Op == patch.Add {
					if c.added[lang.name] == nil {
						c.added[lang.name] = map[string]bool{}
					}
					c.added[lang.name][name] = true
				}
			}
			if l.Op == patch.Context || lang.isComment(l.Text) {
				continue
			}
			test, inAttrs := olds.test, olds.pending
			if l.Op == patch.Add {
				test, inAttrs = news.test, news.pending
			}
			if test == "" && !isTest && !inAttrs {
				continue // outside tests, in a file that is not a test file
			}
			k := key{file: path, test: test}
			if n := len(lang.assert.FindAllStringIndex(l.Text, -1)); n > 0 {
				cnt := c.asserts[k]
				if cnt == nil {
					cnt = &count{}
					c.asserts[k] = cnt
					c.keyOrder = append(c.keyOrder, k)
					c.keyLang[k] = lang.name
				}
				if l.Op == patch.Remove {
					if cnt.removed == 0 {
						cnt.line = l.Old
					}
					cnt.removed += n
				} else {
					cnt.added += n
				}
			}
			if lang.skip.MatchString(l.Text) {
				t := strings.TrimSpace(l.Text)
				if l.Op == patch.Remove {
					movedSkips = append(movedSkips, t)
				} else {
					skips = append(skips, addedSkip{text: t, test: test, line: l.New})
				}
			}
		}
	}
	for _, s := range skips {
		if i := indexOf(movedSkips, s.text); i >= 0 {
			movedSkips = append(movedSkips[:i], movedSkips[i+1:]...)
			continue
		}
		c.out = append(c.out, Finding{Kind: AddedSkip, Lang: lang.name, File: path, Test: s.test, Marker: s.text, Line: s.line})
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// side follows one side (old or new) of a hunk: the test the current line
// is in, and for Rust whether a test attribute precedes.
type side struct {
	test    string
	pending bool // a Rust test attribute was seen; its fn comes next
}

// start sets the enclosing test from the hunk header's section, the line
// git shows as the enclosing function. In a file that is not a test file
// (Rust's inline tests) the section proves nothing: its attribute is not
// shown.
func (s *side) start(l *language, section string, isTest bool) {
	if !isTest && l.needsAttr {
		return
	}
	if name, ok := l.testName(section); ok {
		s.test = name
	}
}

// line reads one line of the side; it returns the test the line
// declares, if it declares one.
func (s *side) line(l *language, text string) (string, bool) {
	if l.isComment(text) || strings.TrimSpace(text) == "" {
		return "", false
	}
	if l.needsAttr {
		if rustTestAttr.MatchString(text) {
			s.pending = true
			return "", false
		}
		if strings.HasPrefix(strings.TrimSpace(text), "#[") {
			return "", false // another attribute between #[test] and its fn
		}
		name, ok := l.testName(text)
		if ok && s.pending {
			s.pending, s.test = false, name
			return name, true
		}
		s.pending = false
		if ok {
			s.test = "" // a fn that is not a test
		}
		return "", false
	}
	if name, ok := l.testName(text); ok {
		s.test = name
		return name, true
	}
	if l.funcStart != nil && l.funcStart.MatchString(text) {
		s.test = ""
	}
	return "", false
}
