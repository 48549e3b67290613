package patch

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// goHunk is a diff of a Go file whose added lines are lines.
func goHunk(path string, lines ...string) string {
	var b strings.Builder
	b.WriteString("diff --git a/" + path + " b/" + path + "\nindex 1111111..2222222 100644\n--- a/" + path + "\n+++ b/" + path + "\n")
	b.WriteString("@@ -1,2 +1," + strconv.Itoa(2+len(lines)) + " @@\n package main\n")
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString(" \n")
	return b.String()
}

func TestFilesHeaders(t *testing.T) {
	docs := "diff --git a/docs/a.md b/docs/a.md\n--- a/docs/a.md\n+++ b/docs/a.md\n@@ -1 +1 @@\n-old\n+new\n"
	tests := []struct {
		name    string
		diff    string
		want    []string
		nonCode bool
	}{
		{name: "added line reading as a +++ header", diff: goHunk("cmd/x.go", "++ b/docs/x.md"), want: []string{"cmd/x.go"}},
		{name: "removed and added lines reading as a header pair",
			diff: "diff --git a/cmd/x.go b/cmd/x.go\n--- a/cmd/x.go\n+++ b/cmd/x.go\n@@ -1,3 +1,3 @@\n a\n--- a/docs/x.md\n+++ b/docs/x.md\n b\n",
			want: []string{"cmd/x.go"}},
		{name: "header-looking lines in a later hunk",
			diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n@@ -10,2 +10,3 @@\n c\n+++ b/docs/y.md\n d\n",
			want: []string{"x.go"}},
		{name: "added line reading as a file start", diff: goHunk("x.go", "diff --git a/docs/a.md b/docs/a.md"), want: []string{"x.go"}},
		{name: "docs only", diff: docs, want: []string{"docs/a.md"}, nonCode: true},
		{name: "docs, then code behind header-looking lines", diff: docs + goHunk("main.go", "++ b/docs/b.md"), want: []string{"docs/a.md", "main.go"}},
		{name: "new file", diff: "diff --git a/n.go b/n.go\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1 @@\n+package n\n",
			want: []string{"n.go"}},
		{name: "empty new file", diff: "diff --git a/empty.go b/empty.go\nnew file mode 100644\nindex 0000000..e69de29\n", want: []string{"empty.go"}},
		{name: "deletion", diff: "diff --git a/gone.go b/gone.go\ndeleted file mode 100644\n--- a/gone.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package gone\n",
			want: []string{"gone.go"}},
		{name: "code renamed into docs", diff: "diff --git a/main.go b/docs/main.md\nsimilarity index 100%\nrename from main.go\nrename to docs/main.md\n",
			want: []string{"docs/main.md", "main.go"}},
		{name: "rename with changes", diff: "diff --git a/a.md b/docs/b.md\nsimilarity index 80%\nrename from a.md\nrename to docs/b.md\n--- a/a.md\n+++ b/docs/b.md\n@@ -1 +1 @@\n-x\n+y\n",
			want: []string{"a.md", "docs/b.md"}, nonCode: true},
		{name: "copy leaves the source", diff: "diff --git a/main.go b/docs/main.md\nsimilarity index 100%\ncopy from main.go\ncopy to docs/main.md\n",
			want: []string{"docs/main.md"}, nonCode: true},
		{name: "quoted names", diff: "diff --git \"a/d\\303\\251j\\303\\240 \\\"vu\\\".go\" \"b/d\\303\\251j\\303\\240 \\\"vu\\\".go\"\n--- \"a/d\\303\\251j\\303\\240 \\\"vu\\\".go\"\n+++ \"b/d\\303\\251j\\303\\240 \\\"vu\\\".go\"\n@@ -1 +1 @@\n-a\n+b\n",
			want: []string{`déjà "vu".go`}},
		{name: "quoted rename", diff: "diff --git \"a/tab\\there.go\" b/docs/x.md\nrename from \"tab\\there.go\"\nrename to docs/x.md\n",
			want: []string{"docs/x.md", "tab\there.go"}},
		{name: "second name quoted", diff: "diff --git a/x.go \"b/docs/\\\"y\\\".md\"\nrename from x.go\nrename to \"docs/\\\"y\\\".md\"\n",
			want: []string{`docs/"y".md`, "x.go"}},
		{name: "mode change of a name with spaces", diff: "diff --git a/my tool.sh b/my tool.sh\nold mode 100644\nnew mode 100755\n", want: []string{"my tool.sh"}},
		{name: "spaces and git's trailing tab", diff: "diff --git a/docs/a b.md b/docs/a b.md\n--- a/docs/a b.md\t\n+++ b/docs/a b.md\t\n@@ -1 +1 @@\n-a\n+b\n",
			want: []string{"docs/a b.md"}, nonCode: true},
		{name: "binary file", diff: "diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and b/img.png differ\n", want: []string{"img.png"}},
		{name: "binary patch data", diff: "diff --git a/lib.so b/lib.so\nindex 1111111..2222222 100755\nGIT binary patch\nliteral 12\nTcmZ?wbhEHbR9Bps\n\nliteral 0\nHcmV?d00001\n\n" + docs,
			want: []string{"docs/a.md", "lib.so"}},
		{name: "no newline at end of file", diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+++ b/docs/y.md\n\\ No newline at end of file\n" + docs,
			want: []string{"docs/a.md", "x.go"}},
		{name: "counts omitted and a stripped context line", diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,3 @@\n a\n\n-b\n+++ b/docs/z.md\n",
			want: []string{"x.go"}},
		{name: "hunk longer than announced", diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n+++ b/docs/z.md\n",
			want: []string{"x.go"}},
		{name: "hunk header without counts", diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@ func main() {\n-a\n+b\n" + docs,
			want: []string{"docs/a.md", "x.go"}},
		{name: "CRLF content", diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\r\n+++ b/docs/q.md\r\n", want: []string{"x.go"}},
		{name: "combined diff", diff: "diff --cc x.go\nindex 1,2..3\n--- a/x.go\n+++ b/x.go\n@@@ -1,1 -1,1 +1,2 @@@\n++++ b/docs/x.md\n", want: []string{"x.go"}},
		{name: "+++ without --- is no header", diff: "diff --git a/x.go b/x.go\nindex 1..2 100644\n+++ b/docs/x.md\n", want: []string{"x.go"}},
		{name: "text before the first file", diff: "From: someone\n+++ b/docs/x.md\n" + goHunk("x.go", "a"), want: []string{"x.go"}},
		{name: "no files", diff: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Files(tt.diff)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Files = %q, want %q", got, tt.want)
			}
			if nc := NonCode(got); nc != tt.nonCode {
				t.Errorf("NonCode = %t, want %t", nc, tt.nonCode)
			}
		})
	}
}

func TestSplitDiffKeepsEveryLine(t *testing.T) {
	diff := "preamble\n" + goHunk("x.go", "++ b/docs/x.md") + "diff --git a/docs/a.md b/docs/a.md\n--- a/docs/a.md\n+++ b/docs/a.md\n@@ -1 +1 @@\n-a\n+b"
	var joined strings.Builder
	for _, f := range splitDiff(diff) {
		joined.WriteString(f.Text)
	}
	if want := strings.TrimPrefix(diff, "preamble\n"); joined.String() != want {
		t.Errorf("parts do not add up to the diff:\n%q\nwant\n%q", joined.String(), want)
	}
}
