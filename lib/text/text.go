// Package text holds the few string helpers every package shares: cutting
// text to a byte budget without splitting a character, and abbreviating
// commit ids.
package text

import "unicode/utf8"

// Ellipsis marks where Clip and ClipTail cut.
const Ellipsis = "…"

// Clip returns s cut to at most n bytes in all, the ellipsis included, at
// a rune boundary; s itself when it fits.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(Ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Ellipsis
}

// ClipTail returns the end of s in at most n bytes in all, the ellipsis
// first, at a rune boundary: what a log or a diagnostic ends with matters
// most.
func ClipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	from := len(s) - max(n-len(Ellipsis), 0)
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return Ellipsis + s[from:]
}

// Abbrev returns the first n characters of a commit id (all of it when
// shorter).
func Abbrev(sha string, n int) string {
	if len(sha) > n {
		return sha[:n]
	}
	return sha
}

// ShortSHA is a commit id as logs, errors and comments show it: 12 hex
// digits.
func ShortSHA(sha string) string { return Abbrev(sha, 12) }
