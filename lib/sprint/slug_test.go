package sprint_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/sprint"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Add billing", "add-billing"},
		{"  Add   billing!  ", "add-billing"},
		{"../../etc/passwd", "etc-passwd"},
		{`feat: "quoted" #5 / nested`, "feat-quoted-5-nested"},
		{"Café crème", "caf-cr-me"},
		{"", "sprint"},
		{"###", "sprint"},
		{"UPPER_case.Mixed", "upper-case-mixed"},
		{strings.Repeat("word ", 20), "word-word-word-word-word-word-word-word-word-word"[:44]},
		{strings.Repeat("x", 60), strings.Repeat("x", 48)},
	} {
		if got := sprint.Slug(tc.in); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUniqueSlug(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{"add-billing": true, "add-billing-2": true}
	if got := sprint.UniqueSlug("Add billing", func(s string) bool { return taken[s] }); got != "add-billing-3" {
		t.Fatalf("UniqueSlug = %q", got)
	}
	if got := sprint.UniqueSlug("free", func(string) bool { return false }); got != "free" {
		t.Fatalf("UniqueSlug = %q", got)
	}
	long := strings.Repeat("x", 48)
	got := sprint.UniqueSlug(long, func(s string) bool { return s == long })
	if got != strings.Repeat("x", 46)+"-2" {
		t.Fatalf("UniqueSlug(long) = %q", got)
	}
}

func TestPathAndSlugOf(t *testing.T) {
	t.Parallel()
	if got := sprint.Path("add-billing"); got != "sprints/add-billing.md" {
		t.Fatalf("Path = %q", got)
	}
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"sprints/add-billing.md", "add-billing", true},
		{"sprints/Add Billing.md", "Add Billing", false},
		{"other/add-billing.md", "", false},
		{"sprints/x/add.md", "", false},
		{"sprints/add.txt", "", false},
	} {
		got, ok := sprint.SlugOf(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("SlugOf(%q) = %q, %v", tc.in, got, ok)
		}
	}
}

func FuzzSlug(f *testing.F) {
	f.Add("Add billing")
	f.Add("../x/y: \"z\"")
	f.Fuzz(func(t *testing.T, title string) {
		s := sprint.Slug(title)
		if !sprint.ValidSlug(s) {
			t.Fatalf("Slug(%q) = %q is not valid", title, s)
		}
		u := sprint.UniqueSlug(title, func(c string) bool { return c == s })
		if u == s || !sprint.ValidSlug(u) {
			t.Fatalf("UniqueSlug(%q) = %q", title, u)
		}
		_ = fmt.Sprint(u)
	})
}
