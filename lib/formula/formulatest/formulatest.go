// Package formulatest holds checks for tests of rendered prompts.
package formulatest

import "strings"

// OutsideFences returns the lines of markdown s that are not inside a
// backtick code fence (CommonMark: a fence of n >= 3 backticks is closed by
// a line of at least n backticks and nothing else). Tests use it to prove
// that untrusted text rendered into a prompt stays inside its fence.
func OutsideFences(s string) []string {
	var out []string
	open := 0
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		n := len(t) - len(strings.TrimLeft(t, "`"))
		switch {
		case open == 0 && n >= 3:
			open = n
		case open > 0 && n >= open && n == len(t):
			open = 0
		case open == 0:
			out = append(out, l)
		}
	}
	return out
}
