package cilog_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/disinto/disinto/lib/cilog"
)

func TestTail(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		budget  int
		want    string
		wantCut bool
	}{
		{"fits", "a\nb\nc\n", 10, "a\nb\nc", false},
		{"exactly the budget", "ab\ncd", 5, "ab\ncd", false},
		{"drops the head at a line boundary", "first line\nsecond\nthird\n", 13, "second\nthird", true},
		{"cut just after a newline keeps that line", "aaaa\nbbbb\ncccc", 9, "bbbb\ncccc", true},
		{"cut inside a line drops that line", "aaaa\nbbbb\ncccc", 8, "cccc", true},
		{"one long line keeps its end", "0123456789", 4, "6789", true},
		{"long last line after short ones", "a\n0123456789", 4, "6789", true},
		{"multi-byte long line starts at a rune", "ééééé", 5, "éé", true},
		{"multi-byte lines", "ä\nöö\nüüü\n", 7, "üüü", true},
		{"empty", "", 4, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := cilog.Tail(tc.in, tc.budget)
			if got != tc.want || cut != tc.wantCut {
				t.Fatalf("Tail(%q, %d) = %q, %v; want %q, %v", tc.in, tc.budget, got, cut, tc.want, tc.wantCut)
			}
			if len(got) > tc.budget {
				t.Fatalf("%d bytes over the budget of %d", len(got), tc.budget)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
		})
	}
}

func TestTailDefaultBudget(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	log := strings.Repeat(line, 1000) + "the error\n"
	got, cut := cilog.Tail(log, 0)
	if !cut || len(got) > cilog.DefaultBudget || !strings.HasSuffix(got, "the error") || !strings.HasPrefix(got, "xxx") {
		t.Fatalf("cut %v, %d bytes, ends %q", cut, len(got), got[len(got)-20:])
	}
}

// FuzzTail holds Tail to its promises on any input: within the budget,
// a suffix of the input, valid UTF-8 from valid UTF-8.
func FuzzTail(f *testing.F) {
	f.Add("a\nbb\nccc\n", 4)
	f.Add("ééé\nü", 3)
	f.Fuzz(func(t *testing.T, s string, budget int) {
		if budget <= 0 || budget > 1<<20 {
			return
		}
		got, cut := cilog.Tail(s, budget)
		trimmed := strings.TrimRight(s, "\n")
		if len(got) > budget || !strings.HasSuffix(trimmed, got) || cut != (got != trimmed) {
			t.Fatalf("Tail(%q, %d) = %q, %v", s, budget, got, cut)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 from valid input: %q", got)
		}
	})
}
