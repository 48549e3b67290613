package forge_test

import (
	"regexp"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

func TestRegistryIsComplete(t *testing.T) {
	t.Parallel()
	colour := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	seen := map[forge.LabelName]bool{}
	for _, l := range forge.Registry() {
		if seen[l.Name] {
			t.Errorf("label %q defined twice", l.Name)
		}
		seen[l.Name] = true
		if !colour.MatchString(l.Color) {
			t.Errorf("label %q colour %q", l.Name, l.Color)
		}
		if l.Description == "" {
			t.Errorf("label %q has no description", l.Name)
		}
		if err := l.Name.Validate(); err != nil {
			t.Error(err)
		}
	}
	if len(seen) != 21 {
		t.Errorf("registry has %d labels, want the 20 of the vocabulary and wontfix", len(seen))
	}
	if err := forge.LabelName("nonsense").Validate(); err == nil {
		t.Error("unknown label validated")
	}
}
