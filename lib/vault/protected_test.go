package vault_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/vault"
)

// protect applies the vault protection disinto init gives the ops
// primary branch: only the admin and the vault bot push, only the
// admin's approval counts and only the admin merges.
func (r *rig) protect() {
	r.t.Helper()
	if err := r.as(r.admin).SetBranchProtection(r.t.Context(), forge.Protection{
		Branch: "main", RequiredApprovals: 1, ApprovalsWhitelist: []string{r.admin.Login},
		MergeWhitelist: []string{r.admin.Login}, PushWhitelist: []string{r.admin.Login, r.vault.Login},
		BlockOnRejected: true, DismissStale: true,
	}); err != nil {
		r.t.Fatal(err)
	}
}

// TestProtectedOps: on an ops repository protected as init leaves it, a
// low-tier action is committed and run, a high-tier one runs after the
// admin's approval, the results land, and a bot's direct push is refused
// by the forge.
func TestProtectedOps(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.protect()
	ctx := t.Context()
	if rec, err := r.requester().Request(ctx, triage("low1")); err != nil || rec.Mode != vault.ModeDirect {
		t.Fatalf("low tier: %+v, %v", rec, err)
	}
	r.requestApproved("high1")
	dev := r.checkout(r.dev, filepath.Join(t.TempDir(), "ops"))
	if _, err := dev.Commit(ctx, "sneak", func(ops.Files) ([]git.FileChange, error) {
		return []git.FileChange{{Path: vault.ActionPath("sneak"), Content: releaseAction("sneak")}}, nil
	}); !errors.Is(err, ops.ErrProtected) {
		t.Fatalf("dev-bot's push: %v", err)
	}
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"low1", "high1"} {
		if e := entry(t, es, id); e.State != vault.StateRan || run.count(id) != 1 {
			t.Errorf("%s: %+v, runs %d", id, e, run.count(id))
		}
		if res, ok := r.result(id); !ok || res.Status != vault.StatusSucceeded {
			t.Errorf("%s result %+v", id, res)
		}
	}
	if res, _ := r.result("high1"); !strings.Contains(res.Approval, "#") {
		t.Errorf("approval %q", res.Approval)
	}
}

// hookRunner calls during before answering.
type hookRunner struct {
	countingRunner
	during func()
}

func (h *hookRunner) Run(ctx context.Context, j vault.Job) (vault.Outcome, error) {
	h.during()
	return h.countingRunner.Run(ctx, j)
}

// TestOutcomeRecordedLater: when the outcome cannot be committed (the
// forge refuses the push), the claim keeps the action from running
// again and the outcome is committed at the next cycle.
func TestOutcomeRecordedLater(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.protect()
	r.requestApproved("a1")
	lock := func(pushers ...string) {
		if err := r.as(r.admin).SetBranchProtection(t.Context(), forge.Protection{Branch: "main", RequiredApprovals: 1,
			ApprovalsWhitelist: []string{r.admin.Login}, MergeWhitelist: []string{r.admin.Login}, PushWhitelist: pushers}); err != nil {
			t.Fatal(err)
		}
	}
	run := &hookRunner{during: func() { lock(r.admin.Login) }}
	d := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token})
	if _, err := d.Cycle(t.Context()); err == nil || !strings.Contains(err.Error(), "committed next cycle") {
		t.Fatalf("cycle: %v", err)
	}
	if res, ok := r.result("a1"); !ok || res.Status != vault.StatusStarted {
		t.Fatalf("claim %+v, %v", res, ok)
	}
	lock(r.admin.Login, r.vault.Login)
	run.during = func() {}
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res, ok := r.result("a1"); !ok || res.Status != vault.StatusSucceeded || run.count("a1") != 1 {
		t.Fatalf("result %+v, runs %d", res, run.count("a1"))
	}
}
