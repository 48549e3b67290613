package dev

import (
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
)

// A forge that cannot be reached while a session is set up is not the
// issue's fault: more failed attempts than would block a broken step
// leave the issue claimed, not blocked, and the session starts once the
// forge answers. (They used to count toward blocking it.)
func TestUnreachableForgeIsNoStrike(t *testing.T) {
	h := newHarness(t, pushing)
	h.g.mu.Lock()
	h.g.worktreeErr = &git.Error{Args: []string{"fetch"}, Stderr: "fatal: unable to access 'http://forge/p.git/': Failed to connect to forge port 3000: Connection refused"}
	h.g.mu.Unlock()
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	for range 2 * maxAfterFailures {
		h.tick()
	}
	if st, _ := h.state(n); st.Stage.Terminal() {
		t.Fatalf("an unreachable forge ended issue #%d: %+v", n, st)
	}
	h.wantLabels(n, forge.LabelInProgress)
	h.g.mu.Lock()
	h.g.worktreeErr = nil
	h.g.mu.Unlock()
	h.tick()
	if len(h.r.Calls()) != 1 {
		t.Fatalf("%d sessions once the forge answers, want 1", len(h.r.Calls()))
	}
	h.wantStage(n, StageAwaitingCI)
}
