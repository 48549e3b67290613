package patch

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// fileDiffText builds one file's git diff with hunks of the given sizes
// (bytes of added lines per hunk, roughly).
func fileDiffText(path string, hunks ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	for i, n := range hunks {
		fmt.Fprintf(&b, "@@ -%d,1 +%d,2 @@\n", i*10+1, i*10+1)
		for written := 0; written < n; {
			line := fmt.Sprintf("+line %d of hunk %d in %s\n", written, i, path)
			b.WriteString(line)
			written += len(line)
		}
	}
	return b.String()
}

func TestChangedFiles(t *testing.T) {
	diff := fileDiffText("lib/x.go", 10) +
		"diff --git a/old.md b/old.md\ndeleted file mode 100644\n--- a/old.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n" +
		"diff --git a/a.bin b/a.bin\nnew file mode 100644\nBinary files /dev/null and b/a.bin differ\n" +
		"diff --git a/from.md b/docs/to.md\nsimilarity index 100%\nrename from from.md\nrename to docs/to.md\n" +
		"diff --git a/with space.md b/with space.md\n--- a/with space.md\n+++ b/with space.md\n@@ -1 +1 @@\n-a\n+b\n"
	got := Files(diff)
	want := []string{"a.bin", "docs/to.md", "from.md", "lib/x.go", "old.md", "with space.md"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changedFiles = %q, want %q", got, want)
	}
}

func TestNonCode(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  bool
	}{
		{"docs and markdown", []string{"docs/a.md", "README.md", "docs/img.png"}, true},
		{"formulas and evidence", []string{"formulas/x.toml", "evidence/run.json"}, true},
		{"upper-case extension", []string{"NOTES.MD"}, true},
		{"code", []string{"lib/x.sh"}, false},
		{"mixed", []string{"README.md", "main.go"}, false},
		{"gardener json is code", []string{"gardener/pending-actions.json"}, false},
		{"nothing changed", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NonCode(tt.files); got != tt.want {
				t.Errorf("NonCode(%q) = %t", tt.files, got)
			}
		})
	}
}

func TestTruncateDiff(t *testing.T) {
	small := fileDiffText("a.go", 100)
	big := fileDiffText("b.go", 4000, 4000, 4000)
	mid := fileDiffText("c.go", 3000)
	tests := []struct {
		name     string
		diff     string
		limit    int
		wantKeep []string // substrings that must be shown
		wantOmit []string // omitted-list entries
		wantNote bool
	}{
		{name: "fits", diff: small + mid, limit: 100000, wantKeep: []string{"a.go", "c.go"}},
		{name: "whole files in order, big one listed", diff: small + big + mid, limit: 6000,
			wantKeep: []string{"+++ b/a.go", "+++ b/c.go"}, wantOmit: []string{"b.go ("}, wantNote: true},
		{name: "first file cut at a hunk", diff: big + small, limit: 9000,
			wantKeep: []string{"+++ b/b.go", "@@ -11,1"}, wantOmit: []string{"b.go (cut;"}, wantNote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := Truncate(tt.diff, tt.limit)
			if len(got) > tt.limit {
				t.Errorf("len = %d, over the limit %d", len(got), tt.limit)
			}
			if (note != "") != tt.wantNote {
				t.Errorf("note = %q", note)
			}
			if tt.wantNote && note != fmt.Sprintf(" (truncated from %d bytes)", len(tt.diff)) {
				t.Errorf("note = %q", note)
			}
			for _, k := range tt.wantKeep {
				if !strings.Contains(got, k) {
					t.Errorf("missing %q", k)
				}
			}
			for _, o := range tt.wantOmit {
				if !strings.Contains(got, "#   "+o) {
					t.Errorf("omitted list lacks %q:\n%s", o, tail(got))
				}
			}
			// Every file shown is shown whole or ends at a hunk/line.
			if !strings.HasSuffix(strings.SplitN(got, "\n# Omitted", 2)[0], "\n") {
				t.Error("shown diff does not end at a line boundary")
			}
		})
	}
}

func TestTruncateDiffHunkBoundary(t *testing.T) {
	big := fileDiffText("b.go", 4000, 4000, 4000)
	got, _ := Truncate(big, 9000)
	shown := strings.SplitN(got, "\n# Omitted", 2)[0]
	if !strings.HasPrefix(big, shown) {
		t.Fatal("shown part is not a prefix of the file diff")
	}
	rest := big[len(shown):]
	if !strings.HasPrefix(rest, "@@ ") {
		t.Errorf("cut is not at a hunk boundary; rest starts %q", rest[:min(20, len(rest))])
	}
}

func TestTruncateDiffManyOmittedFiles(t *testing.T) {
	var b strings.Builder
	b.WriteString(fileDiffText("huge.go", 30000))
	for i := range 2000 {
		b.WriteString(fileDiffText(fmt.Sprintf("dir/file-with-a-long-name-%04d.go", i), 20))
	}
	got, _ := Truncate(b.String(), 25000)
	if len(got) > 25000 {
		t.Fatalf("len = %d over the limit", len(got))
	}
	if !strings.Contains(got, "more files\n") {
		t.Errorf("a long omitted list is not summarised:\n%s", tail(got))
	}
}

func TestCutAtLineUTF8(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"line boundary", "héllo\nwörld\n", 10, "héllo\n"},
		{"single long line, split rune dropped", "ab€€€", 4, "ab"},
		{"single long line, whole runes", "ab€€€", 5, "ab€"},
		{"fits", "abc", 10, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CutAtLine(tt.in, tt.limit)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("CutAtLine(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
			}
		})
	}
}

func TestTruncateDiffNeverSplitsUTF8(t *testing.T) {
	line := "+" + strings.Repeat("日本語", 2000) // one line, 18001 bytes
	diff := "diff --git a/u.txt b/u.txt\n--- a/u.txt\n+++ b/u.txt\n@@ -0,0 +1 @@\n" + line + "\n"
	for limit := 100; limit < 110; limit++ {
		got, _ := Truncate(diff, limit)
		if !utf8.ValidString(got) || len(got) > limit {
			t.Fatalf("limit %d: invalid or too long (%d bytes)", limit, len(got))
		}
	}
}

func tail(s string) string {
	if len(s) > 400 {
		return "…" + s[len(s)-400:]
	}
	return s
}

func TestOnly(t *testing.T) {
	a, b, c := fileDiffText("a.go", 1), fileDiffText(".forgejo/workflows/ci.yml", 2), fileDiffText("b.go", 1)
	got := Only(a+b+c, func(p string) bool { return strings.HasPrefix(p, ".forgejo/") })
	if got != b {
		t.Fatalf("Only = %q, want %q", got, b)
	}
	if got := Only(a+c, func(string) bool { return false }); got != "" {
		t.Fatalf("Only of nothing = %q", got)
	}
}
