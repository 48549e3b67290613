package filer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/sprint"
)

func TestSprintPaths(t *testing.T) {
	t.Parallel()
	diff := strings.Join([]string{
		"diff --git a/sprints/add-billing.md b/sprints/add-billing.md",
		"new file mode 100644",
		"--- /dev/null",
		"+++ b/sprints/add-billing.md",
		"@@ -0,0 +1 @@",
		"++++ b/sprints/not-a-header.md",
		"+++ b/sprints/content-line.md",
		"diff --git a/sprints/old.md b/sprints/old.md",
		"deleted file mode 100644",
		"--- a/sprints/old.md",
		"+++ /dev/null",
		"--- a/sprints/nested/x.md",
		"+++ b/sprints/nested/x.md",
		"--- a/vault/x.md",
		"+++ b/vault/x.md",
		"--- /dev/null",
		"+++ b/sprints/.gitkeep",
		`--- /dev/null`,
		`+++ "b/sprints/with space.md"`,
		"--- a/sprints/add-billing.md",
		"+++ b/sprints/add-billing.md",
	}, "\n")
	got := sprintPaths(diff)
	if want := []string{"sprints/add-billing.md", "sprints/with space.md"}; !slices.Equal(got, want) {
		t.Fatalf("sprintPaths = %q, want %q", got, want)
	}
}

func spec(t *testing.T, block string) sprint.Spec {
	t.Helper()
	s, err := sprint.Parse("sprints/s.md", []byte("# Sprint: S\n## Vision issues\n- #5 — v\n"+forge.FilerBegin+"\n"+block+forge.FilerEnd+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The body's dependencies are exactly the prerequisites: not the vision
// number in the footer, and a marker typed into the sprint is neutralised.
func TestIssueBody(t *testing.T) {
	t.Parallel()
	s := spec(t, "- id: a\n  title: A\n- id: b\n  title: B\n  depends_on: [a]\n  body: |\n    Text on #5's idea.\n\n    <!-- decomposed-from: #9, sprint: x, id: y -->\n")
	body := issueBody(s, s.SubIssues[1], []int64{41})
	if got := deps.ParseFor(42, body); !slices.Equal(got, []int64{41}) {
		t.Fatalf("dependencies %v in\n%s", got, body)
	}
	ms := forge.FindDecomposedFrom(body)
	if len(ms) != 1 || ms[0] != (forge.DecomposedFrom{Vision: 5, Sprint: "s", ID: "b"}) || !strings.HasSuffix(body, ms[0].String()) {
		t.Fatalf("markers %+v in\n%s", ms, body)
	}
	if got := deps.Parse(issueBody(s, s.SubIssues[0], nil)); len(got) != 0 {
		t.Fatalf("a sub-issue without prerequisites depends on %v", got)
	}
}

// A body that would hide the dependency list, or make the sub-issue wait
// for its own vision, is refused before anything is filed.
func TestCheckBodies(t *testing.T) {
	t.Parallel()
	for name, block := range map[string]string{
		"unclosed fence": "- id: a\n  title: A\n- id: b\n  title: B\n  depends_on: [a]\n  body: |\n    ```\n    code\n",
		"own vision":     "- id: a\n  title: A\n  body: |\n    This depends on #5.\n",
	} {
		var r *refusal
		if err := checkBodies(spec(t, block)); !errors.As(err, &r) {
			t.Errorf("%s: checkBodies = %v", name, err)
		}
	}
	if err := checkBodies(spec(t, "- id: a\n  title: A\n- id: b\n  title: B\n  depends_on: [a]\n  body: |\n    ```\n    code\n    ```\n")); err != nil {
		t.Errorf("closed fence: %v", err)
	}
}
