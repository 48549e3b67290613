// Package deps reads the prerequisites an issue declares in its body and
// answers questions about the resulting issue graph: which issues are ready,
// which dependency cycles exist and in which order the work can be done.
//
// Issue text is untrusted input: the parser never panics, bounds its work by
// the length of the body, and only ever returns positive issue numbers.
package deps

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Parse returns the sorted, de-duplicated issue numbers that body declares as
// dependencies. Two forms are recognised, case-insensitively:
//
//   - A dependency section: a heading of level 1 to 3 whose text starts with
//     "Depends on", "Depends-on", "Blocked by" or "Dependencies". Every #N up
//     to the next heading of level 1 or 2 (or of the opener's level, for a
//     level-3 opener) counts; deeper headings such as "### detail" inside a
//     "## Depends on" section do not end it.
//   - An inline declaration: "depends on", "depends-on" or "blocked by"
//     anywhere in the text. Only the #N references that follow the keyword up
//     to the end of its sentence count, so "Fixes #3; this depends on #4."
//     yields 4 alone. When nothing but punctuation follows the keyword on its
//     line ("**Depends on:**"), the list items directly below it count.
//
// Text inside fenced code blocks (``` or ~~~), inline code spans and sections
// headed "Related" (at any level) is ignored. A reference must stand on its
// own: "#12" counts, "repo#12", "&#39;" and "#12a" do not.
func Parse(body string) []int64 {
	p := parser{found: map[int64]struct{}{}}
	p.run(body)
	out := make([]int64, 0, len(p.found))
	for n := range p.found {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ParseFor is Parse for the body of issue self: a reference to self is not a
// dependency and is dropped.
func ParseFor(self int64, body string) []int64 {
	all := Parse(body)
	return slices.DeleteFunc(all, func(n int64) bool { return n == self })
}

var (
	// headingRE matches an ATX heading: up to three spaces, 1-6 hashes, then
	// a space or the end of the line.
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$`)
	// sectionRE matches heading text that opens a dependency section.
	sectionRE = regexp.MustCompile(`(?i)^(?:depends(?:[ \t]+|[ \t]*-[ \t]*)on|blocked[ \t]+by|dependencies)\b`)
	// relatedRE matches heading text that opens an ignored section.
	relatedRE = regexp.MustCompile(`(?i)^related\b`)
	// inlineRE finds an inline dependency keyword.
	inlineRE = regexp.MustCompile(`(?i)\b(?:depends(?:[ \t]+|[ \t]*-[ \t]*)on|blocked[ \t]+by)\b`)
	// refRE finds #N; the caller checks the characters around the match.
	refRE = regexp.MustCompile(`#([0-9]+)`)
	// listItemRE matches a Markdown list item.
	listItemRE = regexp.MustCompile(`^[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+`)
	// leadInRE matches what may follow a keyword that introduces a list:
	// colons, emphasis and whitespace only.
	leadInRE = regexp.MustCompile(`^[\s:*_]*$`)
)

// parser holds the state of one pass over a body.
type parser struct {
	found map[int64]struct{}

	fence      string // the opening fence of the code block we are in, or ""
	depLevel   int    // level of the open dependency section, 0 if none
	relLevel   int    // level of the open "Related" section, 0 if none
	listFollow bool   // the previous line introduced a dependency list
}

func (p *parser) run(body string) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	for line := range strings.SplitSeq(body, "\n") {
		p.line(line)
	}
}

func (p *parser) line(line string) {
	if p.inFence(line) {
		p.listFollow = false
		return
	}
	text := stripCodeSpans(line)

	if m := headingRE.FindStringSubmatch(text); m != nil {
		p.listFollow = false
		level, title := len(m[1]), m[2]
		p.heading(level, title)
		if p.relLevel > 0 {
			return
		}
		if p.depLevel > 0 && p.depLevel != level {
			// A sub-heading inside a dependency section: count its refs.
			p.addRefs(title)
			return
		}
		if loc := sectionRE.FindStringIndex(title); loc != nil && level <= 3 {
			p.keywordTail(title[loc[1]:])
			return
		}
		p.inline(title)
		return
	}
	if p.relLevel > 0 {
		p.listFollow = false
		return
	}
	if p.listFollow {
		if strings.TrimSpace(text) == "" {
			return // a blank line may separate the lead-in from its list
		}
		if listItemRE.MatchString(text) {
			p.addRefs(text)
			return
		}
		p.listFollow = false
	}
	if p.depLevel > 0 {
		p.addRefs(text)
		return
	}
	p.inline(text)
}

// heading updates the section state for a heading of the given level.
func (p *parser) heading(level int, title string) {
	if p.relLevel > 0 && level <= p.relLevel {
		p.relLevel = 0
	}
	if p.depLevel > 0 && level <= max(2, p.depLevel) {
		p.depLevel = 0
	}
	switch {
	case relatedRE.MatchString(title):
		p.relLevel = level
	case p.depLevel == 0 && level <= 3 && sectionRE.MatchString(title):
		// A nested "### Depends on" inside an open section keeps the outer
		// section's level, so only the outer section's closers end it.
		p.depLevel = level
	}
}

// inFence reports whether line belongs to a fenced code block (including the
// fence lines themselves) and updates the fence state.
func (p *parser) inFence(line string) bool {
	trimmed := strings.TrimLeft(line, " \t")
	if p.fence != "" {
		run := fenceRun(trimmed)
		if run != "" && run[0] == p.fence[0] && len(run) >= len(p.fence) &&
			strings.TrimSpace(trimmed[len(run):]) == "" {
			p.fence = ""
		}
		return true
	}
	run := fenceRun(trimmed)
	if run == "" {
		return false
	}
	// A backtick fence's info string may not contain backticks.
	if run[0] == '`' && strings.Contains(trimmed[len(run):], "`") {
		return false
	}
	p.fence = run
	return true
}

// fenceRun returns the run of three or more backticks or tildes s starts
// with, or "".
func fenceRun(s string) string {
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

// inline scans text for dependency keywords and adds the references in the
// rest of each keyword's sentence.
func (p *parser) inline(text string) {
	for _, loc := range inlineRE.FindAllStringIndex(text, -1) {
		p.keywordTail(text[loc[1]:])
	}
}

// keywordTail adds the references in tail (the text after a keyword) up to
// the end of its sentence. A tail with nothing but lead-in punctuation makes
// the list directly below count.
func (p *parser) keywordTail(tail string) {
	sentence := tail[:sentenceEnd(tail)]
	if leadInRE.MatchString(sentence) {
		p.listFollow = true
		return
	}
	p.addRefs(sentence)
}

// sentenceEnd returns the index at which the first sentence of s ends: a
// '.', '!' or '?' followed by whitespace or the end of s, or len(s).
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' {
				return i
			}
		}
	}
	return len(s)
}

// addRefs records every standalone #N in text.
func (p *parser) addRefs(text string) {
	for _, m := range refRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		if start > 0 && isWordByte(text[start-1]) {
			continue // repo#12, &#39;
		}
		if end < len(text) && isWordByte(text[end]) {
			continue // #12a
		}
		n, err := strconv.ParseInt(text[m[2]:m[3]], 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		p.found[n] = struct{}{}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '&' || c == '#' || c == '/' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// stripCodeSpans blanks out inline code spans (`code`, “co`de“) in line so
// that references and keywords inside them are not seen. An unmatched
// backtick run is literal text, as in CommonMark.
func stripCodeSpans(line string) string {
	if !strings.Contains(line, "`") {
		return line
	}
	b := []byte(line)
	i := 0
	for i < len(b) {
		if b[i] != '`' {
			i++
			continue
		}
		open := i
		for i < len(b) && b[i] == '`' {
			i++
		}
		n := i - open
		closeAt := findRun(b, i, n)
		if closeAt < 0 {
			continue // no closing run: the backticks are literal
		}
		for j := open; j < closeAt+n; j++ {
			b[j] = ' '
		}
		i = closeAt + n
	}
	return string(b)
}

// findRun returns the index of the next run of exactly n backticks in b at or
// after from, or -1.
func findRun(b []byte, from, n int) int {
	for i := from; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		start := i
		for i < len(b) && b[i] == '`' {
			i++
		}
		if i-start == n {
			return start
		}
	}
	return -1
}
