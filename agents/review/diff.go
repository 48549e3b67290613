package review

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// fileDiff is one file's part of a unified diff.
type fileDiff struct {
	Path string // the new path; the old one for deletions
	Text string
}

// splitDiff cuts a unified diff (git format) into per-file parts.
func splitDiff(diff string) []fileDiff {
	var out []fileDiff
	lines := strings.SplitAfter(diff, "\n")
	cur := -1
	for _, l := range lines {
		if strings.HasPrefix(l, "diff --git ") {
			out = append(out, fileDiff{Path: pathFromHeader(l)})
			cur = len(out) - 1
		}
		if cur < 0 {
			continue
		}
		out[cur].Text += l
		switch {
		case strings.HasPrefix(l, "+++ b/"):
			out[cur].Path = strings.TrimSpace(strings.TrimPrefix(l, "+++ b/"))
		case strings.HasPrefix(l, "--- a/") && out[cur].Path == "":
			out[cur].Path = strings.TrimSpace(strings.TrimPrefix(l, "--- a/"))
		}
	}
	return out
}

// pathFromHeader reads "diff --git a/x b/x" (paths without spaces; the
// +++/--- lines correct it otherwise).
func pathFromHeader(l string) string {
	f := strings.Fields(strings.TrimSpace(l))
	if len(f) >= 4 {
		return strings.TrimPrefix(f[3], "b/")
	}
	return ""
}

// changedFiles lists the paths a diff touches, sorted, deletions included.
func changedFiles(diff string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range splitDiff(diff) {
		if f.Path != "" && !seen[f.Path] {
			seen[f.Path] = true
			out = append(out, f.Path)
		}
	}
	sort.Strings(out)
	return out
}

// truncateDiff keeps whole files of diff, in order, while they fit in
// limit bytes, and names every file it left out with its size. A single
// first file larger than the limit is cut at a line boundary, never inside
// a UTF-8 sequence. It returns the text and a note for the heading ("" when
// nothing was cut).
func truncateDiff(diff string, limit int) (string, string) {
	if len(diff) <= limit {
		return diff, ""
	}
	var b strings.Builder
	var omitted []string
	for _, f := range splitDiff(diff) {
		if b.Len()+len(f.Text) <= limit {
			b.WriteString(f.Text)
			continue
		}
		if b.Len() == 0 {
			b.WriteString(cutAtLine(f.Text, limit))
			omitted = append(omitted, fmt.Sprintf("%s (cut; %d bytes)", f.Path, len(f.Text)))
			continue
		}
		omitted = append(omitted, fmt.Sprintf("%s (%d bytes)", f.Path, len(f.Text)))
	}
	if len(omitted) > 0 {
		b.WriteString("\n# Omitted from this diff (read them in the checkout):\n")
		for _, o := range omitted {
			b.WriteString("#   " + o + "\n")
		}
	}
	return b.String(), fmt.Sprintf(" (truncated from %d bytes)", len(diff))
}

func cutAtLine(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// nonCode reports whether every changed file is documentation or a formula,
// for which the reference reviews without waiting for CI.
func nonCode(files []string) bool {
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
