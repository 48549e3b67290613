// Package provenance says whose word a work item is: a maintainer's (a
// user with write access to the repository, by user id, who is not one of
// the factory's bots) or an outsider's. Outsider text is not worked until
// a maintainer applies backlog to it themselves, and items a role derives
// from others (tech-debt findings, fix issues, gardener enrichments and
// bundles) take the least trusted origin of what they were made from,
// recorded in a hidden origin marker (forge.MarkerOrigin) by the role's
// bot.
//
// The origin of an issue or pull request is its author's: a writer's text
// is a maintainer's, anyone else's an outsider's, and a pull request from
// a fork is an outsider's whoever opened it. Origin markers in the body
// can only lower that: the least trusted marker wins, so a marker claiming
// maintainer origin, written by whoever, raises nothing, and an item a bot
// derived from outsider text stays an outsider's even when its body
// quotes a forged marker. Only writers (maintainers and the bots) can put
// a marker into a writer's item, so lowering by marker is theirs to do.
package provenance

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Origin is whose word a work item's text is.
type Origin string

// The origins, most trusted first.
const (
	// Maintainer: a user with write access wrote it (or a bot made it
	// from maintainers' text only).
	Maintainer Origin = "maintainer"
	// Outsider: anyone else wrote it, or it was made from such text.
	Outsider Origin = "outsider"
)

// Validate reports whether o is an origin.
func (o Origin) Validate() error {
	switch o {
	case Maintainer, Outsider:
		return nil
	}
	return fmt.Errorf("origin %q: want %s or %s", string(o), Maintainer, Outsider)
}

// Least returns the least trusted of os: Outsider when any is not
// Maintainer (an unknown value included), Maintainer when all are or
// there are none.
func Least(os ...Origin) Origin {
	for _, o := range os {
		if o != Maintainer {
			return Outsider
		}
	}
	return Maintainer
}

// Marker renders the origin marker a role's bot appends to an item it
// derived: o is the least trusted origin of the sources, from names them
// (e.g. "pr-12", "issue-7").
func Marker(o Origin, from ...string) string {
	if o.Validate() != nil {
		o = Outsider
	}
	f := map[string]string{"trust": string(o)}
	if len(from) > 0 {
		f["from"] = strings.Join(from, ",")
	}
	// The kind and keys are constants of the right form: String cannot
	// fail.
	m, _ := forge.Marker{Kind: forge.MarkerOrigin, Fields: f}.String()
	return m
}

// FromMarkers returns the least trusted origin the origin markers of body
// record, and false when it carries none. A marker whose trust is not an
// origin counts as an outsider's.
func FromMarkers(body string) (Origin, bool) {
	found := false
	least := Maintainer
	for _, m := range forge.ParseMarkers(body) {
		if m.Kind != forge.MarkerOrigin {
			continue
		}
		found = true
		least = Least(least, Origin(m.Fields["trust"]))
	}
	return least, found
}
