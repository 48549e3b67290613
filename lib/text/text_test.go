package text_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/disinto/disinto/lib/text"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer line of text", 10, "a longe…"},
		{"ééééé", 6, "ééé"[:2] + "…"},
		{"abc", 0, "…"},
	} {
		got := text.Clip(tc.s, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if len(tc.s) > tc.n && tc.n >= len(text.Ellipsis) && len(got) > tc.n {
			t.Errorf("Clip(%q, %d) = %q: %d bytes", tc.s, tc.n, got, len(got))
		}
	}
}

func TestClipTail(t *testing.T) {
	if got := text.ClipTail("the start, then the error", 12); got != "…the error" {
		t.Errorf("ClipTail = %q", got)
	}
	got := text.ClipTail(strings.Repeat("é", 10), 8)
	if !utf8.ValidString(got) || len(got) > 8 || !strings.HasPrefix(got, text.Ellipsis) {
		t.Errorf("ClipTail of runes = %q", got)
	}
	if got := text.ClipTail("fits", 8); got != "fits" {
		t.Errorf("ClipTail of a short string = %q", got)
	}
}

func TestShortSHA(t *testing.T) {
	if got := text.ShortSHA("4f1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c"); got != "4f1d2c3b4a5e" {
		t.Errorf("ShortSHA = %q", got)
	}
	if got := text.Abbrev("abc", 7); got != "abc" {
		t.Errorf("Abbrev of a short id = %q", got)
	}
}
