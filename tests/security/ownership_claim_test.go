package security

import (
	"fmt"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestOwnershipOutsiderClaimMarker: hidden claim comments by a user outside
// the bot set, one naming the outsider and one naming the dev bot, neither
// make the bot give up its claim nor keep it off the issue.
func TestOwnershipOutsiderClaimMarker(t *testing.T) {
	t.Parallel()
	s := newScene(t, sceneOpts{})
	n := s.issue("Add a greeting")
	for _, by := range []string{s.outsider.Login, s.devBot.Login} {
		m, err := forge.Marker{Kind: forge.MarkerClaim, Fields: map[string]string{"by": by, "nonce": "00000000badc0de0"}}.String()
		if err != nil {
			t.Fatal(err)
		}
		s.comment(s.outsider, n, fmt.Sprintf("Working on it.\n%s", m))
	}
	s.tick()
	i, err := s.repo.GetIssue(sceneCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	if !i.AssignedTo(s.devBot.Login) || !i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("dev bot did not claim #%d past an outsider's claim comments: assignees %v, labels %v", n, i.Assignees, i.Labels)
	}
	if calls := len(s.runner.Calls()); calls != 1 {
		t.Fatalf("%d model sessions after the claim, want 1", calls)
	}
}
