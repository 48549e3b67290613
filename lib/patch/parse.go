package patch

import (
	"regexp"
	"strconv"
	"strings"
)

// fileDiff is one file's part of a unified diff.
type fileDiff struct {
	// Old and New are the paths before and after, without git's a/ and b/
	// prefixes; "" stands for /dev/null (a created or deleted file).
	Old, New string
	// Copied marks a copy: Old is left as it was.
	Copied bool
	Text   string
	// Hunks are the file's hunks as read; a file whose diff turned opaque
	// (binary, combined or malformed) keeps those read before.
	Hunks []Hunk
}

// path is the name the file goes by: the new path, the old one for
// deletions.
func (f fileDiff) path() string {
	if f.New != "" {
		return f.New
	}
	return f.Old
}

// paths are the paths the change touches: the new one, and the old one
// when it differs (deletions and renames: code moved into docs/ leaves the
// build).
func (f fileDiff) paths() []string {
	var out []string
	if f.New != "" {
		out = append(out, f.New)
	}
	if f.Old != "" && f.Old != f.New && !f.Copied {
		out = append(out, f.Old)
	}
	return out
}

// Where a line of a file's diff sits.
type zone int

const (
	// zoneHeader is the extended header after "diff --git": the only
	// place where ---, +++, rename and copy lines name paths.
	zoneHeader zone = iota
	// zoneHunk is inside a hunk, with lines of it still to come.
	zoneHunk
	// zoneBetween is after a complete hunk: another hunk or "\ No newline
	// at end of file" may follow.
	zoneBetween
	// zoneOpaque is binary data, a combined-diff hunk or a malformed hunk:
	// nothing more is read from this file.
	zoneOpaque
)

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// parser reads a git diff line by line. Content lines are recognised by
// counting the lines each hunk header announces, so no added or removed
// text is ever read as a header; a new file starts only at a "diff --git"
// line, which no content line can be (content lines start with a space,
// "+", "-" or "\").
type parser struct {
	files      []fileDiff
	zone       zone
	sawOld     bool // a "--- " line was just read in the header
	oldN, newN int  // lines of the current hunk still to come
	// oldLine and newLine number the next old and new line of the hunk.
	oldLine, newLine int
}

// splitDiff cuts a unified diff (git format) into per-file parts. Text
// before the first "diff --git" line is dropped.
func splitDiff(diff string) []fileDiff {
	var p parser
	for _, raw := range strings.SplitAfter(diff, "\n") {
		if raw != "" {
			p.line(raw)
		}
	}
	return p.files
}

func (p *parser) line(raw string) {
	l := strings.TrimSuffix(raw, "\n")
	if f, ok := fileStart(l); ok {
		p.files = append(p.files, f)
		p.zone, p.sawOld = zoneHeader, false
	}
	if len(p.files) == 0 {
		return
	}
	f := &p.files[len(p.files)-1]
	f.Text += raw
	switch p.zone {
	case zoneHeader:
		p.header(f, l)
	case zoneHunk:
		p.hunkLine(l)
	case zoneBetween:
		switch {
		case strings.HasPrefix(l, "@@ "):
			p.startHunk(l)
		case strings.HasPrefix(l, `\`):
		default:
			p.zone = zoneOpaque
		}
	}
}

// fileStart parses a line that starts a file's diff.
func fileStart(l string) (fileDiff, bool) {
	if rest, ok := strings.CutPrefix(l, "diff --git "); ok {
		old, nw := gitHeaderPaths(rest)
		return fileDiff{Old: old, New: nw}, true
	}
	for _, pre := range []string{"diff --cc ", "diff --combined "} {
		if rest, ok := strings.CutPrefix(l, pre); ok {
			name := unquote(rest)
			return fileDiff{Old: name, New: name}, true
		}
	}
	return fileDiff{}, false
}

// header reads one line of a file's extended header.
func (p *parser) header(f *fileDiff, l string) {
	wasOld := p.sawOld
	p.sawOld = false
	switch {
	case strings.HasPrefix(l, "@@ "):
		p.startHunk(l)
	case strings.HasPrefix(l, "@@@"), strings.HasPrefix(l, "GIT binary patch"), strings.HasPrefix(l, "Binary files "):
		p.zone = zoneOpaque
	case strings.HasPrefix(l, "--- "):
		f.Old = markerPath(l[4:], "a/")
		p.sawOld = true
	case strings.HasPrefix(l, "+++ ") && wasOld:
		f.New = markerPath(l[4:], "b/")
	case strings.HasPrefix(l, "rename from "):
		f.Old = unquote(l[len("rename from "):])
	case strings.HasPrefix(l, "rename to "):
		f.New = unquote(l[len("rename to "):])
	case strings.HasPrefix(l, "copy from "):
		f.Old, f.Copied = unquote(l[len("copy from "):]), true
	case strings.HasPrefix(l, "copy to "):
		f.New, f.Copied = unquote(l[len("copy to "):]), true
	}
	// index, mode, similarity lines name no path.
}

// startHunk reads a hunk header; one that does not parse ends what is read
// of the file.
func (p *parser) startHunk(l string) {
	m := hunkHeader.FindStringSubmatch(l)
	if m == nil {
		p.zone = zoneOpaque
		return
	}
	oldN, err1 := hunkCount(m[2])
	newN, err2 := hunkCount(m[4])
	if err1 != nil || err2 != nil {
		p.zone = zoneOpaque
		return
	}
	p.oldN, p.newN = oldN, newN
	p.zone = zoneHunk
	oldStart, _ := strconv.Atoi(m[1])
	newStart, _ := strconv.Atoi(m[3])
	f := &p.files[len(p.files)-1]
	f.Hunks = append(f.Hunks, Hunk{OldStart: oldStart, NewStart: newStart,
		Section: strings.TrimSpace(l[len(m[0]):])})
	p.oldLine, p.newLine = oldStart, newStart
	if oldN == 0 && newN == 0 {
		p.zone = zoneBetween
	}
}

// hunkCount reads a hunk header's line count, 1 when omitted.
func hunkCount(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	return strconv.Atoi(s)
}

// hunkLine counts one line of a hunk. A line the hunk has no room for is
// malformed and ends what is read of the file.
func (p *parser) hunkLine(l string) {
	op := byte(' ') // an empty line is a context line whose space was stripped
	if l != "" {
		op = l[0]
	}
	switch {
	case op == '\\':
		return
	case op == ' ' && p.oldN > 0 && p.newN > 0:
		p.oldN--
		p.newN--
	case op == '-' && p.oldN > 0:
		p.oldN--
	case op == '+' && p.newN > 0:
		p.newN--
	default:
		p.zone = zoneOpaque
		return
	}
	p.record(op, l)
	if p.oldN == 0 && p.newN == 0 {
		p.zone = zoneBetween
	}
}

// markerPath reads the path of a ---/+++ line: "" for /dev/null, without
// the prefix, the tab git appends to names with spaces and any timestamp.
func markerPath(s, prefix string) string {
	if !strings.HasPrefix(s, `"`) {
		s, _, _ = strings.Cut(s, "\t")
	}
	s = unquote(s)
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// gitHeaderPaths reads the two paths of "diff --git a/x b/y". Names with
// special characters are C-quoted; unquoted names with spaces are
// ambiguous and resolved as git does, by assuming both names are equal
// (renames and copies carry exact names in their own header lines).
func gitHeaderPaths(rest string) (old, nw string) {
	if strings.HasPrefix(rest, `"`) {
		if q, tail, ok := cutQuoted(rest); ok && strings.HasPrefix(tail, " ") {
			return strings.TrimPrefix(q, "a/"), strings.TrimPrefix(unquote(tail[1:]), "b/")
		}
	} else if strings.HasSuffix(rest, `"`) {
		for i := strings.Index(rest, ` "`); i >= 0; {
			if q, tail, ok := cutQuoted(rest[i+1:]); ok && tail == "" {
				return strings.TrimPrefix(rest[:i], "a/"), strings.TrimPrefix(q, "b/")
			}
			j := strings.Index(rest[i+1:], ` "`)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	if n := len(rest) / 2; len(rest)%2 == 1 && rest[n] == ' ' {
		a, b := strings.TrimPrefix(rest[:n], "a/"), strings.TrimPrefix(rest[n+1:], "b/")
		if a == b {
			return a, b
		}
	}
	if i := strings.Index(rest, " b/"); i >= 0 {
		return strings.TrimPrefix(rest[:i], "a/"), rest[i+3:]
	}
	// Unreadable: keep the whole text as the name, so the file is still
	// counted (and never as documentation by accident of a prefix).
	return rest, rest
}

// cutQuoted reads a C-quoted string at the start of s and returns its
// value and what follows it.
func cutQuoted(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			return v, s[i+1:], err == nil
		}
	}
	return "", "", false
}

// unquote returns the value of a C-quoted name (git quotes names with
// special characters), or s itself.
func unquote(s string) string {
	if v, tail, ok := cutQuoted(s); ok && tail == "" {
		return v
	}
	return s
}
