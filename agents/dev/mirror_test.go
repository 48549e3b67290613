package dev

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/vault"
)

// fakeVault records the mirror actions requested; err fails every
// request while set.
type fakeVault struct {
	mu      sync.Mutex
	actions []vault.Action
	calls   int
	err     error
}

func (v *fakeVault) RequestAction(_ context.Context, a vault.Action) (vault.Receipt, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	if v.err != nil {
		return vault.Receipt{}, v.err
	}
	v.actions = append(v.actions, a)
	return vault.Receipt{ID: a.ID, Tier: vault.TierLow, Mode: vault.ModeDirect}, nil
}

func (v *fakeVault) filed() []vault.Action {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]vault.Action(nil), v.actions...)
}

func (v *fakeVault) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls
}

func (v *fakeVault) fail(err error) {
	v.mu.Lock()
	v.err = err
	v.mu.Unlock()
}

// mergeOne drives a backlog issue to a merge and returns the merged
// commit.
func mergeOne(t *testing.T, h *harness) string {
	t.Helper()
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CISuccess, "ok")
	h.tick()
	h.f.review(st.PR, "review-bot", forge.ReviewApprove, "ok")
	h.tick()
	h.wantLedger(ledger.ReasonMerged, "")
	return h.f.pull(st.PR).MergedSHA
}

// TestMirrorPushRequested: a merge asks the vault for one mirror-push
// action per mirror, naming the mirror, the commit and the mirror's
// secret by name; the agent holds no credential and pushes nothing.
func TestMirrorPushRequested(t *testing.T) {
	h := newHarness(t, pushing)
	merged := mergeOne(t, h)
	got := h.v.filed()
	if len(got) != 1 {
		t.Fatalf("requests %+v", got)
	}
	a := got[0]
	if a.ID != vault.MirrorActionID("github", merged) || a.Formula != vault.MirrorFormula ||
		a.Vars[vault.MirrorVarName] != "github" || a.Vars[vault.MirrorVarSHA] != merged ||
		len(a.Secrets) != 1 || a.Secrets[0] != "MIRROR_GITHUB_TOKEN" || a.BlastRadius > vault.TierLow {
		t.Fatalf("action %+v", a)
	}
	if q := h.a.PendingMirrors(); len(q) != 0 {
		t.Fatalf("pending after the vault took it: %+v", q)
	}
}

// TestMirrorRequestRetried: a request the vault did not take is shown
// until it is taken, and asked again with backoff on later ticks; a
// request the vault already has (ErrDuplicateID) counts as taken. It
// never fails the merge.
func TestMirrorRequestRetried(t *testing.T) {
	h := newHarness(t, pushing)
	h.v.fail(errors.New("ops repository unreachable"))
	merged := mergeOne(t, h)
	q := h.a.PendingMirrors()
	if len(q) != 1 || q[0].Mirror != "github" || q[0].SHA != merged || q[0].Attempts != 1 || !strings.Contains(q[0].Error, "unreachable") {
		t.Fatalf("pending after a failed request: %+v", q)
	}
	if rep := h.a.Report(); len(rep.Pending) != 1 || rep.Pending[0].What != "mirror push request" || rep.Pending[0].Target != "github" {
		t.Fatalf("report %+v", rep.Pending)
	}
	// Not due yet: nothing is asked.
	calls := h.v.count()
	h.tick()
	if q := h.a.PendingMirrors(); len(q) != 1 || q[0].Attempts != 1 || h.v.count() != calls {
		t.Fatalf("before the retry is due: %+v, calls %d→%d", q, calls, h.v.count())
	}
	// Still failing when due: the wait doubles.
	h.advanceClock(mirrorRetryMin)
	h.tick()
	q = h.a.PendingMirrors()
	if len(q) != 1 || q[0].Attempts != 2 || q[0].Next.Sub(h.clock()) != 2*time.Minute {
		t.Fatalf("after a second failure: %+v", q)
	}
	// The vault had it after all.
	h.v.fail(vault.ErrDuplicateID)
	h.advanceClock(2 * time.Minute)
	h.tick()
	if q := h.a.PendingMirrors(); len(q) != 0 {
		t.Fatalf("pending after the vault answered: %+v", q)
	}
}

// TestMirrorRequestSurvivesRestart: a request the vault did not take is
// kept in the data dir; a restarted agent shows it and files it once the
// vault answers, and a later restart finds nothing left to ask. A file
// that does not decode is kept aside, not overwritten.
func TestMirrorRequestSurvivesRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "proj", "mirror-requests.json")
	h := newHarness(t, pushing, func(o *Options) { o.MirrorRequests = file })
	h.v.fail(errors.New("ops repository unreachable"))
	merged := mergeOne(t, h)

	h.a = h.newAgent() // the daemon restarted
	q := h.a.PendingMirrors()
	if len(q) != 1 || q[0].SHA != merged || q[0].Attempts != 1 {
		t.Fatalf("pending after a restart: %+v", q)
	}
	h.v.fail(nil)
	h.advanceClock(mirrorRetryMin)
	h.tick()
	if got := h.v.filed(); len(got) != 1 || got[0].Vars[vault.MirrorVarSHA] != merged {
		t.Fatalf("filed after the restart: %+v", got)
	}
	h.a = h.newAgent()
	if q := h.a.PendingMirrors(); len(q) != 0 {
		t.Fatalf("pending after it was filed and another restart: %+v", q)
	}

	if err := os.WriteFile(file, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.a = h.newAgent()
	if q := h.a.PendingMirrors(); len(q) != 0 {
		t.Fatalf("pending from a torn file: %+v", q)
	}
	if b, err := os.ReadFile(file + ".unreadable"); err != nil || string(b) != "{torn" {
		t.Fatalf("the torn file was not kept aside: %q %v", b, err)
	}
}
