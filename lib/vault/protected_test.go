package vault_test

import (
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
