package testguard

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// asking matches the words with which an issue asks for a test to go or to
// change: remove, delete, drop, skip, disable, ignore, xfail, rename,
// retire, obsolete (in any inflection).
var asking = regexp.MustCompile(`(?i)\b(?:remov|delet|drop|skip|disabl|ignor|xfail|renam|retir|obsolet)\w*`)

// Excused reports whether issue, the text of the issue the change
// resolves, asks for what f reports: one of its lines names f's subject
// (the test's name; for a deleted file or a finding outside any test, the
// file's path or base name) as a whole word, and also says remove, delete,
// drop, skip, disable, ignore, xfail, rename, retire or obsolete. An issue
// that only names a failing test asks for it to be fixed, not removed.
func Excused(f Finding, issue string) bool {
	subjects := []string{f.File, path.Base(f.File)}
	if f.Test != "" && f.Kind != DeletedFile {
		subjects = []string{f.Test}
	}
	for _, line := range strings.Split(issue, "\n") {
		if !asking.MatchString(line) {
			continue
		}
		for _, s := range subjects {
			if mentions(line, s) {
				return true
			}
		}
	}
	return false
}

// Standing returns the findings that issue does not excuse.
func Standing(fs []Finding, issue string) []Finding {
	var out []Finding
	for _, f := range fs {
		if !Excused(f, issue) {
			out = append(out, f)
		}
	}
	return out
}

// mentions reports whether line contains name, case-insensitively, not
// as part of a longer identifier (TestParse is not in TestParseAll).
func mentions(line, name string) bool {
	if name == "" {
		return false
	}
	l, n := strings.ToLower(line), strings.ToLower(name)
	for i := 0; ; {
		j := strings.Index(l[i:], n)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(n)
		if (at == 0 || !identChar(l[at-1])) && (end == len(l) || !identChar(l[end])) {
			return true
		}
		i = at + 1
	}
}

func identChar(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// Describe renders f as one line of Markdown. Names come from the change,
// which its author controls: they are shown in code spans stripped of
// backticks and line breaks, and bounded.
func Describe(f Finding) string {
	loc := code(f.File)
	if f.Line > 0 {
		loc = code(fmt.Sprintf("%s:%d", f.File, f.Line))
	}
	switch f.Kind {
	case DeletedFile:
		s := "test file " + code(f.File) + " deleted"
		if len(f.Tests) > 0 {
			names := make([]string, 0, len(f.Tests))
			for _, t := range f.Tests {
				names = append(names, code(t))
			}
			s += ", with its tests " + strings.Join(names, ", ")
		}
		return s
	case DeletedTest:
		return "test " + code(f.Test) + " deleted or renamed (was at " + loc + ")"
	case AddedSkip:
		s := "skip marker " + code(f.Marker) + " added at " + loc
		if f.Test != "" {
			s += " in test " + code(f.Test)
		}
		return s
	case FewerAssertions:
		in := "test " + code(f.Test)
		if f.Test == "" {
			in = "test file " + code(f.File)
		}
		return fmt.Sprintf("%s has fewer assertions: %d removed, %d added (first removed at %s)", in, f.Removed, f.Added, loc)
	}
	return string(f.Kind) + " at " + loc
}

// maxName bounds a name shown in a description.
const maxName = 120

func code(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '`', '\n', '\r':
			return '\''
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxName {
		s = string(r[:maxName-1]) + "…"
	}
	return "`" + s + "`"
}
