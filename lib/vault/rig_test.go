package vault_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/vault"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is an ops repository as disinto init leaves one: owned by a human
// admin, the seeded policy on main, the vault bot, a dev bot and a
// second human (bob) with write access.
type rig struct {
	t     *testing.T
	srv   *forgetest.Server
	admin forgetest.User
	vault forgetest.User
	dev   forgetest.User
	bob   forgetest.User
	name  string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	srv := gitea.Get(t)
	r := &rig{t: t, srv: srv, admin: srv.NewUser(t, "admin"), vault: srv.NewUser(t, "vault-bot"),
		dev: srv.NewUser(t, "dev-bot"), bob: srv.NewUser(t, "bob")}
	r.name = srv.Unique("ops")
	ctx := t.Context()
	if _, err := r.admin.Client.CreateRepo(ctx, forge.NewRepo{Name: r.name, AutoInit: true, DefaultBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	repo := r.as(r.admin)
	for _, u := range []forgetest.User{r.vault, r.dev, r.bob} {
		if err := repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
			t.Fatal(err)
		}
	}
	policy, err := os.ReadFile("../provision/opslayout/vault/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.CreateFiles(ctx, "main", "seed the vault policy", []forge.NewFile{{Path: vault.PolicyPath, Content: policy}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// as returns the ops repository acting as u.
func (r *rig) as(u forgetest.User) *forge.RepoClient { return u.Client.Repo(r.admin.Login, r.name) }

// checkout returns an ops checkout of u's in a directory of its own.
func (r *rig) checkout(u forgetest.User, dir string) *ops.Repo {
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: r.srv.URL, Username: u.Login, Password: u.Password}})
	name, email := git.Identity(u.Login)
	return ops.Open(ops.Options{Git: g, URL: r.srv.URL + "/" + r.admin.Login + "/" + r.name + ".git",
		Dir: dir, Name: name, Email: email, Attempts: 50})
}

// requester returns a Requester acting as the vault bot.
func (r *rig) requester() *vault.Requester {
	q, err := vault.NewRequester(vault.RequestOptions{Ops: r.checkout(r.vault, filepath.Join(r.t.TempDir(), "ops")),
		Forge: r.as(r.vault), Formulas: formulas})
	if err != nil {
		r.t.Fatal(err)
	}
	return q
}

// dispatcher returns a dispatcher acting as the vault bot, with its data
// under dir.
func (r *rig) dispatcher(dir string, run vault.Executor, sec vault.SecretSource) *vault.Dispatcher {
	name, email := git.Identity(r.vault.Login)
	d, err := vault.NewDispatcher(vault.DispatcherOptions{
		Ops: r.checkout(r.vault, filepath.Join(dir, "ops")), Forge: r.as(r.vault), Formulas: formulas,
		Vault: vault.Identity{Name: name, Email: email}, Admins: []string{r.admin.Login},
		Bots: []string{r.vault.Login, r.dev.Login}, Runner: run, Secrets: sec, Redactor: redact.New(), Instance: dir,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// approveAndMerge approves pull request n as reviewer at its head and
// merges it as the admin.
func (r *rig) approveAndMerge(n int64, reviewer forgetest.User) {
	r.t.Helper()
	r.approve(n, reviewer)
	r.merge(n)
}

func (r *rig) approve(n int64, reviewer forgetest.User) string {
	r.t.Helper()
	ctx := r.t.Context()
	pr, err := r.as(reviewer).GetPull(ctx, n)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.as(reviewer).CreateReview(ctx, n, forge.NewReview{Event: forge.ReviewApprove, CommitID: pr.HeadSHA}); err != nil {
		r.t.Fatal(err)
	}
	return pr.HeadSHA
}

func (r *rig) merge(n int64) {
	r.t.Helper()
	ctx := r.t.Context()
	pr, err := r.as(r.admin).GetPull(ctx, n)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.as(r.admin).Merge(ctx, n, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
		r.t.Fatal(err)
	}
}

// result returns the result record of id on the forge's main, ok false
// when there is none.
func (r *rig) result(id string) (vault.Result, bool) {
	r.t.Helper()
	f, err := r.as(r.admin).GetFile(r.t.Context(), vault.ResultPath(id), "main")
	if err != nil {
		return vault.Result{}, false
	}
	res, err := vault.ParseResult(id, f.Content)
	if err != nil {
		r.t.Fatal(err)
	}
	return res, true
}

// countingRunner counts runs per action and answers with exit.
type countingRunner struct {
	mu    sync.Mutex
	runs  map[string]int
	jobs  []vault.Job
	exit  int
	logs  string
	block chan struct{} // when set, every run waits for it
}

func (c *countingRunner) Run(ctx context.Context, j vault.Job) (vault.Outcome, error) {
	if c.block != nil {
		select {
		case <-c.block:
		case <-ctx.Done():
			return vault.Outcome{}, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[j.Action.ID]++
	c.jobs = append(c.jobs, j)
	return vault.Outcome{ExitCode: c.exit, Logs: c.logs}, nil
}

func (c *countingRunner) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

// secretMap is a SecretSource.
type secretMap map[string]string

func (s secretMap) Get(name string) (string, error) {
	if v, ok := s[name]; ok {
		return v, nil
	}
	return "", vault.ErrSecretMissing
}

// entry returns the entry of id among es.
func entry(t *testing.T, es []vault.Entry, id string) vault.Entry {
	t.Helper()
	for _, e := range es {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no action %s among %+v", id, es)
	return vault.Entry{}
}
