package cilog

import (
	"strings"
	"unicode/utf8"
)

// DefaultBudget is the number of log bytes handed to the model when the
// caller sets none: twice the reference's 8000-byte error log, because the
// reference also added 50 lines of step log on top (spec 10 §9).
const DefaultBudget = 16 << 10

// Tail returns the end of s in at most budget bytes, and whether anything
// was cut. The end of a CI log is where the failure is, so the head is
// dropped. The cut falls at a line boundary; only when the last line alone
// exceeds the budget is that line cut, at a rune boundary, so the result
// is valid UTF-8 whenever s is. A budget of zero or less takes
// DefaultBudget.
func Tail(s string, budget int) (string, bool) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	s = strings.TrimRight(s, "\n")
	if len(s) <= budget {
		return s, false
	}
	start := len(s) - budget
	// Keep whole lines: start after the first newline at or past the cut.
	// A cut that lands just after a newline already starts a line.
	if start > 0 && s[start-1] == '\n' {
		return s[start:], true
	}
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 {
		return s[start+i+1:], true
	}
	// One line longer than the budget: keep its end, from a rune start.
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:], true
}
