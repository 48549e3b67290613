package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox"
)

// reviewBot is a daemon's review agent acting as e.reviewer, with the real
// claude CLI against the scripted model server.
type reviewBot struct {
	t    testing.TB
	rt   *agent.Runtime
	a    *review.Agent
	proj *config.Project
	led  *ledger.Ledger
	data string
}

// newReviewer starts the review agent of e's project. rt, when not nil,
// is shared with other agents (one daemon).
func (e *devEnv) newReviewer(rt *agent.Runtime) *reviewBot { return e.newReviewerVia(rt, e.srv.URL) }

// newReviewerVia is newReviewer with the agent's forge requests sent to
// forgeURL (a counting proxy) and opts applied to its options.
func (e *devEnv) newReviewerVia(rt *agent.Runtime, forgeURL string, opts ...func(*review.Options)) *reviewBot {
	return e.newReviewerOn(rt, e.repo, "proj", forgeURL, opts...)
}

// newReviewerOn starts the review agent of project name on repo.
func (e *devEnv) newReviewerOn(rt *agent.Runtime, repo *forge.RepoClient, name, forgeURL string, opts ...func(*review.Options)) *reviewBot {
	t := e.t
	t.Helper()
	r := &reviewBot{t: t, data: t.TempDir(), rt: rt}
	r.led = openLedger(t, r.data)
	if r.rt == nil {
		r.rt = agent.New(agent.Options{Ledger: r.led, Log: zerolog.Nop()})
	}
	r.proj = &config.Project{Name: name, Repo: repo.Slug(), ForgeURL: e.srv.URL, PrimaryBranch: "main",
		CI: config.CI{System: config.CIStatuses}}
	runner := scriptedRunner(t, e.modelURL, r.data)
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := forge.New(forge.Options{URL: forgeURL, Token: e.reviewer.Token, User: e.reviewer.Login})
	if err != nil {
		t.Fatal(err)
	}
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: e.srv.URL, Username: e.reviewer.Login, Password: e.reviewer.Password}})
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(r.data, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	o := review.Options{
		Project: r.proj,
		Forge:   fc.Repo(repo.Owner(), repo.Name()),
		Claude:  runner,
		Formula: f,
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: e.srv.URL + "/" + repo.Slug() + ".git",
			CloneDir: filepath.Join(r.data, "clone"), Sandbox: sb, KeyPrefix: "review-" + name}),
		StateDir: filepath.Join(r.data, "state"),
		Timeout:  4 * time.Minute,
	}
	for _, opt := range opts {
		opt(&o)
	}
	a, err := review.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	return r
}

// tick runs one review pass and waits for its sessions.
func (r *reviewBot) tick() { tickAndWait(r.t, r.rt, r.a, r.proj, config.RoleReview) }

func (r *reviewBot) records() []ledger.Record { return ledgerRecords(r.t, r.data) }

// commitPush writes files in the clone, commits them on branch and pushes.
func (e *devEnv) commitPush(dir, branch string, files map[string]string) string {
	e.t.Helper()
	runGit(e.t, dir, "checkout", "-q", "-B", branch)
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			e.t.Fatal(err)
		}
		runGit(e.t, dir, "add", name)
	}
	runGit(e.t, dir, "commit", "-q", "-m", "change "+branch)
	runGit(e.t, dir, "push", "-q", "origin", branch)
	return runGit(e.t, dir, "rev-parse", "HEAD")
}
