package sprint

import (
	"path"
	"strconv"
	"strings"
)

// Dir is the ops repo directory that holds the sprint files.
const Dir = "sprints"

// MaxSlug bounds the length of a slug, suffix included.
const MaxSlug = 48

// fallbackSlug is the slug of a title with no letter or digit in it.
const fallbackSlug = "sprint"

// maxUniqueTries bounds UniqueSlug's search; far more sprints than an ops
// repo will ever hold.
const maxUniqueTries = 100000

// Slug turns a title into a file-name-safe slug: lower-case ASCII letters,
// digits and single hyphens, no leading or trailing hyphen, at most MaxSlug
// bytes (cut at a word boundary where one is near), never empty. Any other
// character, including '/', '.', ':', '#' and quotes, separates words.
func Slug(title string) string {
	var b strings.Builder
	pendingDash := false
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if pendingDash && b.Len() > 0 {
				b.WriteByte('-')
			}
			pendingDash = false
			b.WriteRune(r)
			continue
		}
		pendingDash = true
	}
	s := clip(b.String(), MaxSlug)
	if s == "" {
		return fallbackSlug
	}
	return s
}

// clip bounds slug s to n bytes, preferring to cut at a hyphen in the last
// third, and trims a trailing hyphen.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '-'); i >= n*2/3 {
		s = s[:i]
	}
	return strings.TrimRight(s, "-")
}

// ValidSlug reports whether s is a slug as Slug makes them.
func ValidSlug(s string) bool {
	return s != "" && len(s) <= MaxSlug && Slug(s) == s
}

// UniqueSlug returns base (made a valid slug) if taken reports it free, or
// else the first of base-2, base-3, … that is free, each still within
// MaxSlug. taken is called with candidates only.
func UniqueSlug(base string, taken func(string) bool) string {
	base = Slug(base)
	if !taken(base) {
		return base
	}
	cand := base
	for n := 2; n < maxUniqueTries; n++ {
		suffix := "-" + strconv.Itoa(n)
		cand = clip(base, MaxSlug-len(suffix)) + suffix
		if !taken(cand) {
			return cand
		}
	}
	return cand
}

// Path returns the ops repo path of the sprint file for slug.
func Path(slug string) string {
	return path.Join(Dir, slug+".md")
}

// SlugOf returns the slug of a sprint file path (sprints/<slug>.md) and
// whether the path is one.
func SlugOf(p string) (string, bool) {
	dir, file := path.Split(p)
	if dir != Dir+"/" || !strings.HasSuffix(file, ".md") {
		return "", false
	}
	s := strings.TrimSuffix(file, ".md")
	return s, ValidSlug(s)
}
