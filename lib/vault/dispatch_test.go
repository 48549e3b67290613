package vault_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/vault"
)

// releaseAction is a high-tier action that needs a secret.
func releaseAction(id string) []byte {
	return []byte("id = \"" + id + "\"\nformula = \"release\"\ncontext = \"Release v1.2.0\"\nsecrets = [\"GITHUB_TOKEN\"]\n" +
		"vars = { version = \"v1.2.0\", sha = \"0123456789abcdef0123456789abcdef01234567\" }\n")
}

const token = "ghp-7c1e5f0d9b-token"

// requestApproved files a high-tier action and has the admin approve and
// merge it.
func (r *rig) requestApproved(id string) {
	r.t.Helper()
	rec, err := r.requester().Request(r.t.Context(), releaseAction(id))
	if err != nil {
		r.t.Fatal(err)
	}
	r.approveAndMerge(rec.PR, r.admin)
}

// TestDispatchApproved is spec 70 §5.11 scenarios 1 and 3: an action an
// admin approved runs once, with its secret, and its result is committed;
// the next cycle skips it.
func TestDispatchApproved(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	run := &countingRunner{exit: 3, logs: "pushed with " + token + "\ndone\n"}
	d := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token})
	es, err := d.Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StateRan || !strings.Contains(e.Approval, r.admin.Login) {
		t.Fatalf("entry %+v", e)
	}
	if run.count("a1") != 1 || run.jobs[0].Secrets["GITHUB_TOKEN"] != token || len(run.jobs[0].Secrets) != 1 {
		t.Fatalf("runs %v, jobs %+v", run.runs, run.jobs)
	}
	if j := run.jobs[0]; j.Tier != vault.TierHigh || j.Approver != r.admin.Login || !strings.Contains(j.Approved(), "approved by the administrator "+r.admin.Login) {
		t.Fatalf("the job does not say who approved it: %+v", j)
	}
	if run.jobs[0].Timeout.Minutes() != vault.DefaultTimeoutMinutes || len(run.jobs[0].Formula) == 0 {
		t.Fatalf("job %+v", run.jobs[0])
	}
	res, ok := r.result("a1")
	if !ok || res.Status != vault.StatusFailed || res.ExitCode != 3 || !strings.Contains(res.Approval, r.admin.Login) {
		t.Fatalf("result %+v, %v", res, ok)
	}
	if strings.Contains(res.Logs, token) || !strings.Contains(res.Logs, "done") {
		t.Fatalf("logs not redacted or missing: %q", res.Logs)
	}
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if run.count("a1") != 1 {
		t.Fatalf("ran again: %d", run.count("a1"))
	}
}

// TestDispatchNonAdminApproval: an action whose pull request a non-admin
// approved (and the admin merged) does not run; it waits for an admin.
func TestDispatchNonAdminApproval(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rec, err := r.requester().Request(t.Context(), releaseAction("a1"))
	if err != nil {
		t.Fatal(err)
	}
	r.approve(rec.PR, r.bob)
	r.merge(rec.PR)
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e := entry(t, es, "a1")
	if e.State != vault.StatePending || !strings.Contains(e.Reason, "awaiting admin approval") || !strings.Contains(e.Reason, r.bob.Login) {
		t.Fatalf("entry %+v", e)
	}
	if run.count("a1") != 0 {
		t.Fatal("ran")
	}
	if _, ok := r.result("a1"); ok {
		t.Fatal("a result was recorded")
	}
}

// TestDispatchPushAfterApproval: a commit pushed to the pull request after
// the admin approved it voids the approval, though the forge merges it.
func TestDispatchPushAfterApproval(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	rec, err := r.requester().Request(ctx, releaseAction("a1"))
	if err != nil {
		t.Fatal(err)
	}
	approved := r.approve(rec.PR, r.admin)
	// Before the merge the action waits in its pull request.
	waiting, err := r.dispatcher(t.TempDir(), &countingRunner{}, nil).Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, waiting, "a1"); e.State != vault.StatePending || e.PR != rec.PR || e.Tier != vault.TierHigh {
		t.Fatalf("before the merge: %+v", e)
	}
	dev := r.as(r.dev)
	f, err := dev.GetFile(ctx, vault.ActionPath("a1"), "vault/a1")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(f.Content), "Release v1.2.0", "Release v6.6.6", 1)
	if _, err := dev.PutFile(ctx, forge.FileChange{Path: vault.ActionPath("a1"), Content: []byte(changed), SHA: f.SHA,
		Branch: "vault/a1", Message: "tweak"}); err != nil {
		t.Fatal(err)
	}
	if pr, _ := r.as(r.admin).GetPull(ctx, rec.PR); pr.HeadSHA == approved {
		t.Fatal("the push did not move the head")
	}
	r.merge(rec.PR)
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || !strings.Contains(e.Reason, "not at its final head") {
		t.Fatalf("entry %+v", e)
	}
	if run.count("a1") != 0 {
		t.Fatal("ran")
	}
}

// pushDirect commits content to main as u, over git.
func (r *rig) pushDirect(u forgetest.User, id string, content []byte) {
	r.t.Helper()
	c := r.checkout(u, filepath.Join(r.t.TempDir(), "ops"))
	if _, err := c.Commit(r.t.Context(), "add "+id, func(ops.Files) ([]git.FileChange, error) {
		return []git.FileChange{{Path: vault.ActionPath(id), Content: content}}, nil
	}); err != nil {
		r.t.Fatal(err)
	}
}

// TestDispatchDirectHighTier is §5.11 scenario 6: a high-tier action
// pushed to main by a bot, claiming direct mode, does not run.
func TestDispatchDirectHighTier(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pushDirect(r.dev, "a1", append([]byte("dispatch_mode = \"direct\"\n"), releaseAction("a1")...))
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || run.count("a1") != 0 {
		t.Fatalf("entry %+v, runs %d", e, run.count("a1"))
	}
}

// TestDispatchDirectThenApprovedPR is §5.11 scenario 7: a file pushed to
// main, followed by an admin-approved pull request from vault/<id> that
// does not carry it, does not run.
func TestDispatchDirectThenApprovedPR(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	r.pushDirect(r.dev, "a1", releaseAction("a1"))
	dev := r.as(r.dev)
	if _, err := dev.CreateBranch(ctx, "vault/a1", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.PutFile(ctx, forge.FileChange{Path: "notes.md", Content: []byte("unrelated\n"), Branch: "vault/a1", Message: "notes"}); err != nil {
		t.Fatal(err)
	}
	pr, err := dev.CreatePull(ctx, forge.NewPull{Title: "vault: a1", Head: "vault/a1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	r.approveAndMerge(pr.Number, r.admin)
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || !strings.Contains(e.Reason, "outside pull request") || run.count("a1") != 0 {
		t.Fatalf("entry %+v, runs %d", e, run.count("a1"))
	}
}

// TestDispatchLowTier: a low-tier action the vault identity committed
// runs without a pull request; the same pushed by another bot does not.
func TestDispatchLowTier(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	if _, err := r.requester().Request(t.Context(), triage("a2")); err != nil {
		t.Fatal(err)
	}
	r.pushDirect(r.dev, "a3", triage("a3"))
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, nil).Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a2"); e.State != vault.StateRan || run.count("a2") != 1 {
		t.Fatalf("a2 %+v, runs %d", e, run.count("a2"))
	}
	if j := run.jobs[0]; j.Tier != vault.TierLow || j.Approver != "" || !strings.Contains(j.Approved(), "no human: low tier by policy") {
		t.Fatalf("a low-tier job says a human approved it: %+v", j)
	}
	if e := entry(t, es, "a3"); e.State != vault.StatePending || run.count("a3") != 0 {
		t.Fatalf("a3 %+v, runs %d", e, run.count("a3"))
	}
	if res, ok := r.result("a2"); !ok || res.Status != vault.StatusSucceeded {
		t.Fatalf("result %+v", res)
	}
}

// TestDispatchMissingSecret is §5.11 scenario 4: no run, the reason
// names the secret, and the action runs once the secret is stored.
func TestDispatchMissingSecret(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	run := &countingRunner{}
	sec := secretMap{}
	d := r.dispatcher(t.TempDir(), run, sec)
	es, err := d.Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || !strings.Contains(e.Reason, "GITHUB_TOKEN") || run.count("a1") != 0 {
		t.Fatalf("entry %+v", e)
	}
	if _, ok := r.result("a1"); ok {
		t.Fatal("a result was recorded")
	}
	sec["GITHUB_TOKEN"] = token
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if run.count("a1") != 1 {
		t.Fatalf("runs %d", run.count("a1"))
	}
}

// TestDispatchDurable is §5.11 scenario 9: the result lives in the ops
// repository, so a dispatcher whose data dir was deleted does not run the
// action again.
func TestDispatchDurable(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	run := &countingRunner{}
	dir := t.TempDir()
	if _, err := r.dispatcher(dir, run, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.dispatcher(dir, run, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if run.count("a1") != 1 {
		t.Fatalf("runs %d", run.count("a1"))
	}
}

// TestDispatchRace: two dispatchers with data dirs of their own race on
// the same actions; each action runs once.
func TestDispatchRace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		r.requestApproved(id)
	}
	run := &countingRunner{}
	ds := []*vault.Dispatcher{
		r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}),
		r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}),
	}
	// Both inspect (and so find every action ready) before either claims.
	for _, d := range ds {
		if es, err := d.Inspect(t.Context()); err != nil || entry(t, es, "r1").State != vault.StateReady {
			t.Fatalf("inspect: %+v, %v", es, err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ds))
	for i, d := range ds {
		wg.Go(func() { _, errs[i] = d.Cycle(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if n := run.count(id); n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
		if res, ok := r.result(id); !ok || res.Status != vault.StatusSucceeded {
			t.Errorf("%s result %+v", id, res)
		}
	}
}
