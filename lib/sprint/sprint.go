// Package sprint reads and names sprint files: the ops repo's
// sprints/<slug>.md that the architect proposes and the filer turns into
// issues (spec 50 §3.4, §5, §6.2).
//
// A sprint file is Markdown with three parts the code reads: the
// "# Sprint: <name>" heading, the "## Vision issues" section whose first
// "#N" names the vision issue, and one sub-issue block between
// forge.FilerBegin and forge.FilerEnd holding a YAML list of sub-issues.
// Parse validates the whole file before anyone acts on any of it, and every
// error names the file and line.
//
// The block is YAML (spec 50 §6.2, required new behaviour):
//
//	<!-- filer:begin -->
//	- id: schema
//	  title: vision(#5): add the billing schema
//	  labels: [backlog]
//	  depends_on: []
//	  body: |
//	    ## Goal
//
//	    ## Acceptance criteria
//	    - [ ] …
//	<!-- filer:end -->
//
// Each entry is a mapping of exactly these keys; id and title are
// required. A plain title is the rest of its line, as in the reference
// grammar, so colons and "#N" in it are kept; a double-quoted title is a
// YAML string ("Use \"strict\" mode"). Blank lines in bodies are kept. The
// whole list is validated before it is returned: ids [a-z0-9-]+ and unique,
// titles non-empty and one line, labels among Labels, depends_on naming
// entries of the block, no cycles. A code fence wrapped around the whole
// block is ignored.
//
// A sprint file is untrusted input (a model wrote it, a human edited it):
// Parse never panics, bounds its input, and returns only values that pass
// validation.
package sprint

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SubIssue is one entry of a sprint's sub-issue block.
type SubIssue struct {
	// ID names the entry within its sprint: [a-z0-9-]+, unique in the block.
	ID string
	// Title is the issue title, one line, never empty.
	Title string
	// Labels are names of Labels, the work labels.
	Labels []string
	// DependsOn holds the ids of entries of the same block this one needs
	// first; no cycles.
	DependsOn []string
	// Body is the issue body as written, blank lines kept, without its
	// trailing newline.
	Body string
}

// Spec is a parsed, validated sprint file.
type Spec struct {
	// Name is the text of the "# Sprint:" heading.
	Name string
	// Vision is the vision issue the sprint decomposes, from the
	// "## Vision issues" section.
	Vision int
	// SubIssues are the block's entries in file order.
	SubIssues []SubIssue
	// Text is the whole file as given to Parse.
	Text []byte
	// Slug is the slug of the path given to Parse when it is a sprint path
	// (sprints/<slug>.md), else "".
	Slug string
}

// MaxFileSize bounds the sprint files Parse accepts.
const MaxFileSize = 256 << 10

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid sprint file")

// Error is a problem at one line of a sprint file.
type Error struct {
	Path string
	Line int // 1-based; 0 when the problem is the file as a whole
	Msg  string
}

// Error implements error as "path:line: msg".
func (e *Error) Error() string {
	if e.Line <= 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

var (
	// nameRe matches the sprint heading.
	nameRe = regexp.MustCompile(`^# Sprint:[ \t]*(.*?)[ \t]*$`)
	// headingRe matches a level 1 or 2 ATX heading, which ends a section.
	headingRe = regexp.MustCompile(`^ {0,3}#{1,2}(?:[ \t]|$)`)
	// visionHeadingRe matches the vision section's heading.
	visionHeadingRe = regexp.MustCompile(`(?i)^ {0,3}## +vision issues?[ \t]*$`)
	// issueRefRe finds a standalone #N.
	issueRefRe = regexp.MustCompile(`(?:^|[^\w&#/])#([1-9][0-9]{0,8})\b`)
)

// Parse reads the sprint file at path (used in errors and for Slug) with
// content data and validates all of it: the heading, the vision number and
// every entry of the sub-issue block (see the package comment). It returns
// an *Error wrapping ErrInvalid for the first problem found.
func Parse(path string, data []byte) (Spec, error) {
	fail := func(line int, format string, args ...any) (Spec, error) {
		return Spec{}, &Error{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxFileSize {
		return fail(0, "file is %d bytes, more than %d", len(data), MaxFileSize)
	}
	lines := splitLines(string(data))
	spec := Spec{Text: data}
	if s, ok := SlugOf(path); ok {
		spec.Slug = s
	}

	nameLine := 0
	for i, l := range lines {
		if m := nameRe.FindStringSubmatch(l); m != nil {
			nameLine = i + 1
			spec.Name = m[1]
			break
		}
	}
	if nameLine == 0 {
		return fail(1, "no %q heading", "# Sprint: <name>")
	}
	if spec.Name == "" {
		return fail(nameLine, "the %q heading has no name", "# Sprint:")
	}

	vision, line, err := visionOf(lines)
	if err != "" {
		return fail(line, "%s", err)
	}
	spec.Vision = vision

	begin, end, bad := blockBounds(lines)
	if bad != nil {
		bad.Path = path
		return Spec{}, bad
	}
	subs, perr := parseBlock(lines[begin:end-1], begin)
	if perr != nil {
		perr.Path = path
		return Spec{}, perr
	}
	spec.SubIssues = subs
	return spec, nil
}

// splitLines splits s into lines without their "\n" or "\r\n".
func splitLines(s string) []string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

// visionOf finds the vision issue number: the first #N of the
// "## Vision issues" section. On failure it returns a message and the line
// it is about.
func visionOf(lines []string) (n, line int, msg string) {
	start := -1
	for i, l := range lines {
		if visionHeadingRe.MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		return 0, 1, `no "## Vision issues" section`
	}
	for i := start + 1; i < len(lines) && !headingRe.MatchString(lines[i]); i++ {
		if m := issueRefRe.FindStringSubmatch(lines[i]); m != nil {
			n, _ = strconv.Atoi(m[1]) // at most nine digits: cannot fail
			return n, i + 1, ""
		}
	}
	return 0, start + 1, `the "## Vision issues" section names no issue (want "- #N — title")`
}

// blockBounds finds the sub-issue block: the 1-based lines of its begin and
// end markers. There must be exactly one of each, in that order.
func blockBounds(lines []string) (begin, end int, err *Error) {
	for i, l := range lines {
		hasBegin := strings.Contains(l, filerBegin)
		hasEnd := strings.Contains(l, filerEnd)
		switch {
		case hasBegin && hasEnd:
			return 0, 0, &Error{Line: i + 1, Msg: "the sub-issue block's markers share one line"}
		case hasBegin && begin != 0:
			return 0, 0, &Error{Line: i + 1, Msg: fmt.Sprintf("a second %s (the first is at line %d)", filerBegin, begin)}
		case hasBegin:
			begin = i + 1
		case hasEnd && begin == 0:
			return 0, 0, &Error{Line: i + 1, Msg: fmt.Sprintf("%s before %s", filerEnd, filerBegin)}
		case hasEnd && end != 0:
			return 0, 0, &Error{Line: i + 1, Msg: fmt.Sprintf("a second %s (the first is at line %d)", filerEnd, end)}
		case hasEnd:
			end = i + 1
		}
	}
	switch {
	case begin == 0:
		return 0, 0, &Error{Line: 0, Msg: fmt.Sprintf("no sub-issue block (%s … %s)", filerBegin, filerEnd)}
	case end == 0:
		return 0, 0, &Error{Line: begin, Msg: fmt.Sprintf("%s without %s", filerBegin, filerEnd)}
	}
	return begin, end, nil
}
