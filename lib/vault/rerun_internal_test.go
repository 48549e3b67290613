package vault

import (
	"errors"
	"strings"
	"testing"
)

func TestRerun(t *testing.T) {
	act := Action{ID: "mirror-github-0a1b", Formula: "mirror-push", Context: "Push main", DispatchMode: "direct"}
	ran := func(id string, st Status) Entry {
		a := act
		a.ID = id
		return Entry{ID: id, State: StateRan, Result: &Result{Status: st}, action: a}
	}
	none := func(string) bool { return false }

	a, err := Rerun(ran("mirror-github-0a1b", StatusFailed), none)
	if err != nil || a.ID != "mirror-github-0a1b-r2" || a.DispatchMode != "" || a.Formula != "mirror-push" ||
		!strings.Contains(a.Context, "Again, after mirror-github-0a1b (failed)") {
		t.Fatalf("first rerun: %+v, %v", a, err)
	}
	taken := func(id string) bool { return id == "mirror-github-0a1b-r3" }
	if a, err := Rerun(ran("mirror-github-0a1b-r2", StatusTimeout), taken); err != nil || a.ID != "mirror-github-0a1b-r4" {
		t.Fatalf("after r2 with r3 taken: %+v, %v", a, err)
	}
	if _, err := Rerun(ran("mirror-github-0a1b-r20", StatusFailed), none); err == nil || !strings.Contains(err.Error(), "20 attempts") {
		t.Fatalf("past the last attempt: %v", err)
	}
	long := strings.Repeat("a", 62)
	if _, err := Rerun(ran(long, StatusSucceeded), none); err == nil || !strings.Contains(err.Error(), "not an action id") {
		t.Fatalf("an id too long for an attempt: %v", err)
	}
	stale := ran("gone", StatusFailed)
	stale.action = Action{}
	if _, err := Rerun(stale, none); !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("an action that no longer validates: %v", err)
	}

	for _, c := range []struct {
		e    Entry
		want error
		text string
	}{
		{Entry{ID: "release-x", State: StatePending, PR: 4}, ErrNotApproved, "pull request #4 awaits an administrator's approval"},
		{Entry{ID: "release-x", State: StatePending, Reason: "high tier, committed without a pull request"}, ErrNotApproved, "committed without a pull request"},
		{Entry{ID: "release-x", State: StateReady, Approval: "approved by alice"}, ErrNotRun, "the dispatcher runs it"},
		{Entry{ID: "release-x", State: StateInvalid, Reason: "x.toml:2: formula: unknown"}, ErrInvalidAction, "formula: unknown"},
	} {
		_, err := Rerun(c.e, none)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), "release-x") {
			t.Errorf("%s %s: %v", c.e.ID, c.e.State, err)
		}
	}
}
