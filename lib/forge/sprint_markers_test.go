package forge_test

import (
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

func TestDecomposedFrom(t *testing.T) {
	t.Parallel()
	d := forge.DecomposedFrom{Vision: 5, Sprint: "add-billing", ID: "schema"}
	if got, want := d.String(), "<!-- decomposed-from: #5, sprint: add-billing, id: schema -->"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	body := "text\n\n" + d.String() + "\n" +
		forge.DecomposedFrom{Vision: 12, Sprint: "b", ID: "api"}.String()
	got := forge.FindDecomposedFrom(body)
	if len(got) != 2 || got[0] != d || got[1].Vision != 12 {
		t.Fatalf("FindDecomposedFrom = %+v", got)
	}
	// The reference's prefix match let vision #1 collect #12's issues; a
	// malformed or loose marker is not one.
	for _, bad := range []string{
		"<!-- decomposed-from: #1",
		"<!-- decomposed-from: #12x, sprint: b, id: api -->",
		"<!-- decomposed-from: #0, sprint: b, id: api -->",
		"<!-- decomposed-from: #5, sprint: B, id: api -->",
		"<!-- decomposed-from: #5, sprint: b, id: api  -->",
	} {
		if got := forge.FindDecomposedFrom(bad); len(got) != 0 {
			t.Errorf("FindDecomposedFrom(%q) = %+v", bad, got)
		}
	}
}
