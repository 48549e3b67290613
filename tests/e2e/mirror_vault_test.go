package e2e

import (
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/vault"
)

// mirrorVault is the vault of a devEnv's project as disinto init leaves
// it for mirror pushes: an ops repository of the owner's with the seeded
// policy, and a vault bot with write access to it and to the project.
type mirrorVault struct {
	e    *devEnv
	bot  forgetest.User
	ops  string // the ops repository's name
	data string
}

func (e *devEnv) newMirrorVault() *mirrorVault {
	e.t.Helper()
	ctx := testCtx(e.t)
	v := &mirrorVault{e: e, bot: e.srv.NewUser(e.t, "vault-bot"), ops: e.srv.Unique("ops"), data: e.t.TempDir()}
	if err := e.repo.AddCollaborator(ctx, v.bot.Login, forge.PermWrite); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.owner.Client.CreateRepo(ctx, forge.NewRepo{Name: v.ops, AutoInit: true, DefaultBranch: "main"}); err != nil {
		e.t.Fatal(err)
	}
	admin := e.owner.Client.Repo(e.owner.Login, v.ops)
	if err := admin.AddCollaborator(ctx, v.bot.Login, forge.PermWrite); err != nil {
		e.t.Fatal(err)
	}
	policy, err := os.ReadFile("../../lib/provision/opslayout/vault/policy.toml")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := admin.CreateFiles(ctx, "main", "seed the vault policy", []forge.NewFile{{Path: vault.PolicyPath, Content: policy}}); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// git is a git runner with the vault bot's credentials.
func (v *mirrorVault) git() *git.Git {
	return git.New(git.Options{Credentials: &git.Credentials{URL: v.e.srv.URL, Username: v.bot.Login, Password: v.bot.Password}})
}

// checkout is an ops checkout of the vault bot's in a directory named dir.
func (v *mirrorVault) checkout(dir string) *ops.Repo {
	name, email := git.Identity(v.bot.Login)
	return ops.Open(ops.Options{Git: v.git(), URL: v.e.srv.URL + "/" + v.e.owner.Login + "/" + v.ops + ".git",
		Dir: filepath.Join(v.data, dir), Name: name, Email: email, Attempts: 50})
}

// requester is the vault's requester as the dev agent gets it.
func (v *mirrorVault) requester() *vault.Requester {
	v.e.t.Helper()
	q, err := vault.NewRequester(vault.RequestOptions{Ops: v.checkout("dev-ops"), Forge: v.bot.Client.Repo(v.e.owner.Login, v.ops), Formulas: formulas.FS})
	if err != nil {
		v.e.t.Fatal(err)
	}
	return q
}

// dispatch runs one cycle of the project's dispatcher with the daemon's
// mirror pusher for mirrors, and returns the entries.
func (v *mirrorVault) dispatch(mirrors map[string]string) []vault.Entry {
	v.e.t.Helper()
	name, email := git.Identity(v.bot.Login)
	pusher := vault.NewMirrorPusher(vault.MirrorPusherOptions{Mirrors: mirrors, Git: v.git(),
		SourceURL: v.e.srv.URL + "/" + v.e.repo.Slug() + ".git", Clone: filepath.Join(v.data, "mirror-clone"), Primary: "main"})
	d, err := vault.NewDispatcher(vault.DispatcherOptions{Ops: v.checkout("vault-ops"), Forge: v.bot.Client.Repo(v.e.owner.Login, v.ops),
		Formulas: formulas.FS, Vault: vault.Identity{Name: name, Email: email}, Admins: []string{v.e.owner.Login},
		Bots: []string{v.bot.Login}, Runner: vault.Executors{By: map[string]vault.Executor{vault.MirrorFormula: pusher}},
		Redactor: redact.New(), Instance: "e2e", Log: zerolog.Nop()})
	if err != nil {
		v.e.t.Fatal(err)
	}
	es, err := d.Cycle(testCtx(v.e.t))
	if err != nil {
		v.e.t.Fatal(err)
	}
	return es
}
