package security

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

// storeSource is the secret store as the dispatcher's SecretSource.
type storeSource struct{ s *secrets.Store }

func (s storeSource) Get(name string) (string, error) {
	v, err := s.s.Get(name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", errors.Join(vault.ErrSecretMissing, err)
	}
	return v, err
}

// mirrorWorld is a project on the real Gitea with its ops repository and
// vault bot, and an external mirror: another user's empty repository on
// the same server, reachable only with that user's token.
type mirrorWorld struct {
	t        *testing.T
	srv      *forgetest.Server
	project  forgetest.Project
	vaultBot forgetest.User
	ops      *forge.RepoClient
	opsName  string
	mirror   *forge.RepoClient
	token    string
	mirrors  map[string]string
	data     string
}

func newMirrorWorld(t *testing.T) *mirrorWorld {
	t.Helper()
	ctx := testCtx(t)
	w := &mirrorWorld{t: t, srv: gitea.Get(t), data: t.TempDir()}
	w.project = w.srv.NewProject(t, "proj")
	w.vaultBot = w.srv.NewUser(t, "vault-bot")
	if err := w.project.Repo.AddCollaborator(ctx, w.vaultBot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	owner := w.project.Owner
	opsName := w.srv.Unique("ops")
	if _, err := owner.Client.CreateRepo(ctx, forge.NewRepo{Name: opsName, AutoInit: true, DefaultBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	w.ops, w.opsName = owner.Client.Repo(owner.Login, opsName), opsName
	if err := w.ops.AddCollaborator(ctx, w.vaultBot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	policy, err := os.ReadFile("../../lib/provision/opslayout/vault/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ops.CreateFiles(ctx, "main", "seed the vault policy", []forge.NewFile{{Path: vault.PolicyPath, Content: policy}}); err != nil {
		t.Fatal(err)
	}
	ext := w.srv.NewUser(t, "mirror")
	mirrorName := w.srv.Unique("mirror")
	if _, err := ext.Client.CreateRepo(ctx, forge.NewRepo{Name: mirrorName, Private: true}); err != nil {
		t.Fatal(err)
	}
	w.mirror, w.token = ext.Client.Repo(ext.Login, mirrorName), ext.Token
	// As an operator had it before the vault pushed mirrors: the token in
	// the URL. The agent is given the URL without it.
	w.mirrors = map[string]string{"github": strings.Replace(w.srv.URL, "://", "://"+ext.Login+":"+ext.Token+"@", 1) + "/" + ext.Login + "/" + mirrorName + ".git"}
	return w
}

// opsAs is the ops repository acting as u.
func (w *mirrorWorld) opsAs(u forgetest.User) *forge.RepoClient {
	return u.Client.Repo(w.project.Owner.Login, w.opsName)
}

// gitAs is a git runner with u's forge credentials.
func (w *mirrorWorld) gitAs(u forgetest.User, red *redact.Redactor) *git.Git {
	return git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: w.srv.URL, Username: u.Login, Password: u.Password}, Redactor: red})
}

// opsCheckout is an ops checkout of the vault bot's under dir.
func (w *mirrorWorld) opsCheckout(dir string, red *redact.Redactor) *ops.Repo {
	name, email := git.Identity(w.vaultBot.Login)
	return ops.Open(ops.Options{Git: w.gitAs(w.vaultBot, red), URL: w.srv.URL + "/" + w.ops.Slug() + ".git",
		Dir: dir, Name: name, Email: email, Attempts: 50})
}

// TestMirrorPushThroughVault: a merge's mirror push is a low-tier vault
// action the dev agent requests by the mirror's name and the commit; the
// dispatcher pushes it with the mirror's secret from the store, once; the
// mirror has the commit. The token is in no agent's options, no session's
// environment, no ops-repository file or commit, no result, no log and no
// git configuration: only encrypted in the secret store.
func TestMirrorPushThroughVault(t *testing.T) {
	w := newMirrorWorld(t)
	ctx := testCtx(t)
	if err := w.project.Repo.CreateFiles(ctx, "main", "the merged change", []forge.NewFile{{Path: "src/feature.txt", Content: []byte("merged\n")}}); err != nil {
		t.Fatal(err)
	}
	head, err := w.project.Repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	store := secrets.Open(w.data)
	if err := store.Set(config.MirrorSecretName("github"), []byte(w.token), false); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	red := redact.New()
	log := zerolog.New(&logs)

	// The dev agent's side: what it is given and what it asks for.
	agentMirrors := map[string]string{}
	for n, u := range w.mirrors {
		agentMirrors[n] = git.StripCredentials(u)
	}
	act := dev.MirrorAction(w.project.Repo.Slug(), "github", agentMirrors["github"], head.SHA)
	q, err := vault.NewRequester(vault.RequestOptions{Ops: w.opsCheckout(filepath.Join(w.data, "dev-ops"), red),
		Forge: w.opsAs(w.vaultBot), Formulas: formulas.FS, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := q.RequestAction(ctx, act)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Tier != vault.TierLow || rc.Mode != vault.ModeDirect {
		t.Fatalf("receipt %+v: a mirror push is low tier, committed directly", rc)
	}
	if again, err := q.RequestAction(ctx, act); err != nil || !again.Existing {
		t.Fatalf("a repeated request is not the same one: %+v, %v", again, err)
	}

	// The dispatcher's side, as the daemon wires it.
	vname, vemail := git.Identity(w.vaultBot.Login)
	pusher := vault.NewMirrorPusher(vault.MirrorPusherOptions{Mirrors: w.mirrors, Git: w.gitAs(w.vaultBot, red),
		SourceURL: w.srv.URL + "/" + w.project.Repo.Slug() + ".git", Clone: filepath.Join(w.data, "vault", "mirror-clone"), Primary: "main", Log: log})
	d, err := vault.NewDispatcher(vault.DispatcherOptions{
		Ops: w.opsCheckout(filepath.Join(w.data, "vault", "ops"), red), Forge: w.opsAs(w.vaultBot),
		Formulas: formulas.FS, Vault: vault.Identity{Name: vname, Email: vemail}, Admins: []string{w.project.Owner.Login},
		Bots:   []string{w.vaultBot.Login, w.project.Dev.Login},
		Runner: vault.Executors{By: map[string]vault.Executor{vault.MirrorFormula: pusher}}, Secrets: storeSource{store},
		Redactor: red, Instance: "test", Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	es, err := d.Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var e vault.Entry
	for _, x := range es {
		if x.ID == act.ID {
			e = x
		}
	}
	if e.State != vault.StateRan || e.Result == nil || e.Result.Status != vault.StatusSucceeded {
		t.Fatalf("entry %+v (result %+v)", e, e.Result)
	}
	got, err := w.mirror.GetBranch(ctx, "main")
	if err != nil || got.SHA != head.SHA {
		t.Fatalf("mirror main %+v, %v; want %s", got, err, head.SHA)
	}
	// Exactly once: the next cycle pushes nothing, records nothing.
	before, _ := w.ops.GetBranch(ctx, "main")
	if _, err := d.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := w.ops.GetBranch(ctx, "main"); after.SHA != before.SHA {
		t.Fatal("a second cycle committed again")
	}

	// Where the token is not.
	for n, u := range agentMirrors {
		if strings.Contains(u, w.token) {
			t.Errorf("the agent's mirror %s carries the token", n)
		}
	}
	if enc, _ := os.ReadFile(filepath.Join(store.Dir(), config.MirrorSecretName("github")+secrets.Ext)); bytes.Contains(enc, []byte(w.token)) {
		t.Error("the secret file holds the token in clear")
	}
	for _, name := range []string{config.MirrorSecretName("github"), "MIRROR_X_TOKEN"} {
		for _, allowed := range claude.DefaultAllowEnv() {
			if name == allowed || (strings.HasSuffix(allowed, "*") && strings.HasPrefix(name, strings.TrimSuffix(allowed, "*"))) {
				t.Errorf("a session's environment would carry %s (allowed by %q)", name, allowed)
			}
		}
	}
	if strings.Contains(logs.String(), w.token) {
		t.Error("the logs hold the token")
	}
	walkNoToken(t, w.token, w.data, store.Dir())
	out, err := exec.Command("git", "-C", filepath.Join(w.data, "vault", "ops"), "log", "-p", "--all").CombinedOutput()
	if err != nil || bytes.Contains(out, []byte(w.token)) || !bytes.Contains(out, []byte(act.ID)) {
		t.Errorf("the ops history holds the token, or not the action (%v)", err)
	}
}

// walkNoToken fails for every file under dir (but skip) holding token.
func walkNoToken(t *testing.T, token, dir, skip string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p == skip {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			if b, rerr := os.ReadFile(p); rerr == nil && bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
}
