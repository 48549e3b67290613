package security

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

// ranActions is an Executor that records which actions ran.
type ranActions struct {
	mu  sync.Mutex
	ids map[string]int
}

func (r *ranActions) Run(_ context.Context, j vault.Job) (vault.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]int{}
	}
	r.ids[j.Action.ID]++
	return vault.Outcome{Logs: "ran"}, nil
}

func (r *ranActions) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// requesterAs files vault actions through an ops checkout that pushes
// with u's credentials and commits as the git identity name <email>.
func (w *mirrorWorld) requesterAs(u forgetest.User, name, email string) *vault.Requester {
	w.t.Helper()
	red := redact.New()
	c := ops.Open(ops.Options{Git: w.gitAs(u, red), URL: w.srv.URL + "/" + w.ops.Slug() + ".git",
		Dir: filepath.Join(w.t.TempDir(), "ops"), Name: name, Email: email, Attempts: 50})
	q, err := vault.NewRequester(vault.RequestOptions{Ops: c, Forge: w.opsAs(u), Formulas: formulas.FS, Log: zerolog.Nop()})
	if err != nil {
		w.t.Fatal(err)
	}
	return q
}

// dispatcher is the vault bot's dispatcher, running actions with run,
// with the mirror's secret in the store.
func (w *mirrorWorld) dispatcher(run vault.Executor) *vault.Dispatcher {
	w.t.Helper()
	if err := secrets.Open(w.data).Set(config.MirrorSecretName("github"), []byte(w.token), false); err != nil {
		w.t.Fatal(err)
	}
	red := redact.New()
	vname, vemail := git.Identity(w.vaultBot.Login)
	d, err := vault.NewDispatcher(vault.DispatcherOptions{
		Ops: w.opsCheckout(filepath.Join(w.t.TempDir(), "vault-ops"), red), Forge: w.opsAs(w.vaultBot),
		Formulas: formulas.FS, Vault: vault.Identity{Name: vname, Email: vemail}, Admins: []string{w.project.Owner.Login},
		Bots:   []string{w.vaultBot.Login, w.project.Dev.Login},
		Runner: vault.Executors{By: map[string]vault.Executor{vault.MirrorFormula: run}}, Secrets: storeSource{secrets.Open(w.data)},
		Redactor: red, Instance: "test", Log: zerolog.Nop(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// commitOnProject commits a file to branch of the project and returns the
// branch's new head.
func (w *mirrorWorld) commitOnProject(ctx context.Context, branch, path string) string {
	w.t.Helper()
	if err := w.project.Repo.CreateFiles(ctx, branch, "change "+path, []forge.NewFile{{Path: path, Content: []byte(path + "\n")}}); err != nil {
		w.t.Fatal(err)
	}
	b, err := w.project.Repo.GetBranch(ctx, branch)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.SHA
}

// TestTrustVaultDirectTierIsWhoPushed: another writer of the ops
// repository (the dev bot) commits a low-tier action with the vault
// identity's name and e-mail and pushes it to the primary branch. It does
// not run: the forge records that the dev bot pushed it. The vault bot's
// own request of the same kind runs.
func TestTrustVaultDirectTierIsWhoPushed(t *testing.T) {
	w := newMirrorWorld(t)
	ctx := testCtx(t)
	devBot := w.project.Dev
	if err := w.ops.AddCollaborator(ctx, devBot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	forgedSHA := w.commitOnProject(ctx, "main", "one.txt")
	ownSHA := w.commitOnProject(ctx, "main", "two.txt")
	url := git.StripCredentials(w.mirrors["github"])

	vname, vemail := git.Identity(w.vaultBot.Login)
	forged := dev.MirrorAction(w.project.Repo.Slug(), "github", url, forgedSHA)
	rc, err := w.requesterAs(devBot, vname, vemail).RequestAction(ctx, forged)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Tier != vault.TierLow || rc.Mode != vault.ModeDirect {
		t.Fatalf("the forged request %+v: want it committed directly to the primary branch", rc)
	}
	own := dev.MirrorAction(w.project.Repo.Slug(), "github", url, ownSHA)
	if _, err := w.requesterAs(w.vaultBot, vname, vemail).RequestAction(ctx, own); err != nil {
		t.Fatal(err)
	}
	// The forged commit is the vault identity's by everything git says.
	cs, err := w.ops.PathCommits(ctx, "main", vault.ActionPath(forged.ID))
	if err != nil || len(cs) != 1 || cs[0].AuthorEmail != vemail || cs[0].CommitterEmail != vemail {
		t.Fatalf("commits of the forged action %+v, %v", cs, err)
	}

	run := &ranActions{}
	es, err := w.dispatcher(run).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		switch e.ID {
		case forged.ID:
			if e.State != vault.StatePending || !strings.Contains(e.Reason, "no push") {
				t.Errorf("the action the dev bot pushed as the vault identity: %s, %q", e.State, e.Reason)
			}
		case own.ID:
			if e.State != vault.StateRan {
				t.Errorf("the vault bot's own action: %s, %q", e.State, e.Reason)
			}
		}
	}
	if n := run.count(forged.ID); n != 0 {
		t.Errorf("the forged action ran %d times", n)
	}
	if n := run.count(own.ID); n != 1 {
		t.Errorf("the vault bot's own action ran %d times, want 1", n)
	}
}

// TestTrustMirrorPushOnlyOfPrimaryCommits: a mirror push action naming a
// commit that is on another branch of the project, never merged, is
// refused: the mirror gets nothing.
func TestTrustMirrorPushOnlyOfPrimaryCommits(t *testing.T) {
	w := newMirrorWorld(t)
	ctx := testCtx(t)
	if _, err := w.project.Repo.CreateBranch(ctx, "unmerged", "main"); err != nil {
		t.Fatal(err)
	}
	sha := w.commitOnProject(ctx, "unmerged", "secret-plan.txt")
	vname, vemail := git.Identity(w.vaultBot.Login)
	act := dev.MirrorAction(w.project.Repo.Slug(), "github", git.StripCredentials(w.mirrors["github"]), sha)
	if _, err := w.requesterAs(w.vaultBot, vname, vemail).RequestAction(ctx, act); err != nil {
		t.Fatal(err)
	}
	pusher := vault.NewMirrorPusher(vault.MirrorPusherOptions{Mirrors: w.mirrors, Git: w.gitAs(w.vaultBot, redact.New()),
		SourceURL: w.srv.URL + "/" + w.project.Repo.Slug() + ".git", Clone: filepath.Join(w.data, "mirror-clone"),
		Primary: "main", Attempts: 1, Log: zerolog.Nop()})
	es, err := w.dispatcher(pusher).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.ID == act.ID && (e.Result == nil || e.Result.Status == vault.StatusSucceeded) {
			t.Errorf("the push of an unmerged commit: %s, result %+v", e.State, e.Result)
		}
	}
	if b, err := w.mirror.GetBranch(ctx, "main"); !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("the mirror has main at %s (%v); want nothing pushed", b.SHA, err)
	}
}
