package patch_test

import (
	"reflect"
	"testing"

	"github.com/disinto/disinto/lib/patch"
)

func TestParseLines(t *testing.T) {
	diff := "diff --git a/x_test.go b/x_test.go\nindex 1..2 100644\n--- a/x_test.go\n+++ b/x_test.go\n" +
		"@@ -10,4 +10,3 @@ func TestA(t *testing.T) {\n a := 1\n-\tt.Fatal(a)\n-\tt.Log(a)\n+\tt.Log(a + 1)\n }\n" +
		"@@ -30 +29,0 @@\n-// gone\n" +
		"diff --git a/old_test.go b/old_test.go\ndeleted file mode 100644\nindex 3..0\n--- a/old_test.go\n+++ /dev/null\n" +
		"@@ -1,2 +0,0 @@\n-package x\n-\n" +
		"diff --git a/a.go b/b.go\nsimilarity index 100%\nrename from a.go\nrename to b.go\n" +
		"diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
	got := patch.Parse(diff)
	want := []patch.File{
		{Old: "x_test.go", New: "x_test.go", Hunks: []patch.Hunk{
			{OldStart: 10, NewStart: 10, Section: "func TestA(t *testing.T) {", Lines: []patch.Line{
				{Op: patch.Context, Old: 10, New: 10, Text: "a := 1"},
				{Op: patch.Remove, Old: 11, Text: "\tt.Fatal(a)"},
				{Op: patch.Remove, Old: 12, Text: "\tt.Log(a)"},
				{Op: patch.Add, New: 11, Text: "\tt.Log(a + 1)"},
				{Op: patch.Context, Old: 13, New: 12, Text: "}"},
			}},
			{OldStart: 30, NewStart: 29, Lines: []patch.Line{{Op: patch.Remove, Old: 30, Text: "// gone"}}},
		}},
		{Old: "old_test.go", Hunks: []patch.Hunk{{OldStart: 1, NewStart: 0, Lines: []patch.Line{
			{Op: patch.Remove, Old: 1, Text: "package x"},
			{Op: patch.Remove, Old: 2, Text: ""},
		}}}},
		{Old: "a.go", New: "b.go"},
		{Old: "img.png", New: "img.png"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse:\n got %+v\nwant %+v", got, want)
	}
	if !got[1].Deleted() || got[0].Deleted() || got[2].Deleted() {
		t.Error("Deleted is wrong")
	}
}
