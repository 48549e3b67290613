// Package patch reads unified diffs as the forge serves them: the files a
// change touches, a size-bounded excerpt for prompts, and the reference's
// rule for changes that hold no code.
package patch

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Files lists the paths a diff touches, sorted: deleted files and both
// sides of a rename included. Only real diff headers name files; added or
// removed lines never do, whatever they say.
func Files(diff string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range splitDiff(diff) {
		for _, p := range f.paths() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Only keeps the parts of diff whose file keep accepts (by any path it
// touches: a deletion or a rename's old side too), in order.
func Only(diff string, keep func(path string) bool) string {
	var b strings.Builder
	for _, f := range splitDiff(diff) {
		for _, p := range f.paths() {
			if keep(p) {
				b.WriteString(f.Text)
				break
			}
		}
	}
	return b.String()
}

// Truncate keeps whole files of diff, in order, while they fit in
// limit bytes, and names every file it left out with its size, so the
// model knows to read them in the checkout. A first file larger than the
// budget is cut at its last hunk boundary that fits (a line boundary when
// no hunk fits), never inside a UTF-8 sequence. The result, list
// included, is at most limit bytes. It returns the text and a note for the
// heading ("" when nothing was cut).
func Truncate(diff string, limit int) (string, string) {
	if len(diff) <= limit {
		return diff, ""
	}
	note := fmt.Sprintf(" (truncated from %d bytes)", len(diff))
	files := splitDiff(diff)
	if len(files) == 0 {
		return CutAtLine(diff, limit), note
	}
	const header = "\n# Omitted from this diff (read them in the checkout):\n"
	reserve := len(header)
	for _, f := range files {
		reserve += len(omittedLine(f, false))
	}
	reserve = min(reserve, limit/4)
	budget := limit - reserve

	var b strings.Builder
	var omitted []string
	for _, f := range files {
		switch {
		case b.Len()+len(f.Text) <= budget:
			b.WriteString(f.Text)
		case b.Len() == 0:
			b.WriteString(cutAtHunk(f.Text, budget))
			omitted = append(omitted, omittedLine(f, true))
		default:
			omitted = append(omitted, omittedLine(f, false))
		}
	}
	if len(omitted) == 0 {
		return b.String(), note
	}
	room := limit - b.Len() - len(header)
	var list strings.Builder
	for i, o := range omitted {
		more := fmt.Sprintf("#   … and %d more files\n", len(omitted)-i)
		if list.Len()+len(o) > room || (i < len(omitted)-1 && list.Len()+len(o)+len(more) > room) {
			if list.Len()+len(more) <= room {
				list.WriteString(more)
			}
			break
		}
		list.WriteString(o)
	}
	if room >= 0 {
		b.WriteString(header)
		b.WriteString(list.String())
	}
	return b.String(), note
}

// omittedLine names a file left out of a truncated diff.
func omittedLine(f fileDiff, cut bool) string {
	if cut {
		return fmt.Sprintf("#   %s (cut; %d bytes)\n", f.path(), len(f.Text))
	}
	return fmt.Sprintf("#   %s (%d bytes)\n", f.path(), len(f.Text))
}

// cutAtHunk returns the longest prefix of one file's diff that ends before
// a hunk header ("@@ ") and fits in limit, keeping at least one hunk;
// failing that, the longest prefix ending at a line boundary.
func cutAtHunk(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	prefix := s[:limit]
	first := strings.Index(s, "\n@@ ")
	if i := strings.LastIndex(prefix, "\n@@ "); i >= 0 && i > first {
		return prefix[:i+1]
	}
	return CutAtLine(s, limit)
}

// CutAtLine returns the longest prefix of s that fits in limit and ends at
// a line boundary, or, for a single overlong line, at a character boundary.
func CutAtLine(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	// Drop a multi-byte character the cut split (at most 3 bytes).
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// NonCode reports whether every changed file is documentation or a formula,
// for which the reference reviews without waiting for CI.
func NonCode(files []string) bool {
	if len(files) == 0 {
		return false
	}
	for _, f := range files {
		if strings.HasPrefix(f, "docs/") || strings.HasPrefix(f, "formulas/") || strings.HasPrefix(f, "evidence/") {
			continue
		}
		if strings.EqualFold(path.Ext(f), ".md") {
			continue
		}
		return false
	}
	return true
}
