package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/sandbox"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// model is what a scripted review session does; n counts sessions.
type model func(n int, inv claude.Invocation) (claude.Result, error)

// harness is one project on the real Gitea: an author who opens pull
// requests from a local clone, a review bot the agent acts as, and a
// scripted model.
type harness struct {
	t      testing.TB
	srv    *forgetest.Server
	author forgetest.User
	bot    forgetest.User
	repo   *forge.RepoClient // as the author
	seed   string            // the author's clone
	proj   *config.Project
	runner *claudetest.Scripted
	led    *ledgertest.Memory
	rt     *agent.Runtime
	a      *review.Agent
	data   string
	// forgeURL is what the agent talks to (a counting proxy in benchmarks).
	forgeURL string

	mu    sync.Mutex
	model model
}

type harnessOpt func(*harness, *review.Options)

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	srv := gitea.Get(t)
	h := &harness{t: t, srv: srv, led: &ledgertest.Memory{}, data: t.TempDir(), forgeURL: srv.URL}
	h.author = srv.NewUser(t, "author")
	h.bot = srv.NewUser(t, "reviewbot")
	h.repo = srv.NewRepo(t, h.author, "proj")
	if err := h.repo.AddCollaborator(ctx(t), h.bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := h.repo.EnsureLabels(ctx(t)); err != nil {
		t.Fatal(err)
	}
	h.proj = &config.Project{Name: "proj", Repo: h.repo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main",
		CI: config.CI{System: config.CIStatuses}}
	h.seed = filepath.Join(t.TempDir(), "seed")
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword(h.author.Login, h.author.Password)
	u.Path = "/" + h.repo.Slug() + ".git"
	gitT(t, "", "clone", "--quiet", u.String(), h.seed)
	h.runner = &claudetest.Scripted{Script: func(ctx context.Context, n int, inv claude.Invocation) (claude.Result, error) {
		h.mu.Lock()
		m := h.model
		h.mu.Unlock()
		if m == nil {
			t.Errorf("unexpected review session %d", n)
			return claude.Result{}, fmt.Errorf("no model")
		}
		return m(n, inv)
	}}
	h.rt = agent.New(agent.Options{Ledger: h.led, Log: zerolog.Nop()})
	h.a = h.newAgent(opts...)
	return h
}

// newAgent builds an agent over the same data dir (a restarted daemon).
func (h *harness) newAgent(opts ...harnessOpt) *review.Agent {
	h.t.Helper()
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		h.t.Fatal(err)
	}
	client, err := forge.New(forge.Options{URL: h.forgeURL, Token: h.bot.Token, User: h.bot.Login, MaxRetries: -1})
	if err != nil {
		h.t.Fatal(err)
	}
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: h.srv.URL, Username: h.bot.Login, Password: h.bot.Password}})
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(h.data, "sessions")})
	if err != nil {
		h.t.Fatal(err)
	}
	o := review.Options{
		Project: h.proj,
		Forge:   client.Repo(h.repo.Owner(), h.repo.Name()),
		Claude:  h.runner,
		Formula: f,
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: h.srv.URL + "/" + h.repo.Slug() + ".git",
			CloneDir: filepath.Join(h.data, "clone"), Sandbox: sb, KeyPrefix: "review-" + h.proj.Name}),
		StateDir: filepath.Join(h.data, "state"),
	}
	for _, opt := range opts {
		opt(h, &o)
	}
	a, err := review.New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) setModel(m model) {
	h.mu.Lock()
	h.model = m
	h.mu.Unlock()
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// tick runs one tick and waits for the sessions it started.
func (h *harness) tick() { h.tickAs(agent.CauseManual) }

// tickAs runs one tick with the given cause and waits for its sessions.
func (h *harness) tickAs(cause agent.Cause) {
	h.t.Helper()
	c := ctx(h.t)
	if err := h.rt.Tick(c, h.a, h.proj, config.RoleReview, cause); err != nil {
		h.t.Fatalf("tick: %v", err)
	}
	if err := h.rt.Wait(c); err != nil {
		h.t.Fatalf("wait: %v", err)
	}
}

// push commits files on branch (created from main when new) and pushes it.
func (h *harness) push(branch string, files map[string]string) string {
	h.t.Helper()
	if gitOK(h.seed, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch) {
		gitT(h.t, h.seed, "checkout", "--quiet", branch)
	} else {
		gitT(h.t, h.seed, "checkout", "--quiet", "-b", branch, "origin/main")
	}
	for name, content := range files {
		p := filepath.Join(h.seed, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
		gitT(h.t, h.seed, "add", name)
	}
	gitT(h.t, h.seed, "commit", "--quiet", "-m", "change on "+branch)
	gitT(h.t, h.seed, "push", "--quiet", "--force", "origin", branch)
	return gitT(h.t, h.seed, "rev-parse", "HEAD")
}

// openPR pushes a branch with files and opens a pull request into base.
func (h *harness) openPR(title, branch, base string, files map[string]string) forge.PullRequest {
	h.t.Helper()
	h.push(branch, files)
	pr, err := h.repo.CreatePull(ctx(h.t), forge.NewPull{Title: title, Body: "Fixes things.", Head: branch, Base: base})
	if err != nil {
		h.t.Fatal(err)
	}
	return pr
}

// ci posts a commit status as the CI would.
func (h *harness) ci(sha string, state forge.CIState) {
	h.t.Helper()
	if err := h.repo.CreateStatus(ctx(h.t), sha, forge.CommitStatus{Context: "ci/test", State: state}); err != nil {
		h.t.Fatal(err)
	}
}

// openGreenPR opens a pull request changing code and marks it green.
func (h *harness) openGreenPR(title, branch string) forge.PullRequest {
	h.t.Helper()
	pr := h.openPR(title, branch, "main", map[string]string{"lib/" + branch + ".sh": "echo " + branch + "\n"})
	h.ci(pr.HeadSHA, forge.CISuccess)
	return pr
}

func (h *harness) comments(n int64) []forge.Comment {
	h.t.Helper()
	cs, err := h.repo.ListComments(ctx(h.t), n)
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

func (h *harness) reviews(n int64) []forge.Review {
	h.t.Helper()
	rs, err := h.repo.ListReviews(ctx(h.t), n)
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}

// botComments returns the review bot's comments containing sub.
func (h *harness) botComments(n int64, sub string) []forge.Comment {
	var out []forge.Comment
	for _, c := range h.comments(n) {
		if c.Author == h.bot.Login && strings.Contains(c.Body, sub) {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) botReviews(n int64) []forge.Review {
	var out []forge.Review
	for _, r := range h.reviews(n) {
		if r.Author == h.bot.Login {
			out = append(out, r)
		}
	}
	return out
}

func (h *harness) sessions() int { return len(h.runner.Calls()) }

func (h *harness) wantSessions(n int) {
	h.t.Helper()
	if got := h.sessions(); got != n {
		h.t.Fatalf("%d review sessions, want %d", got, n)
	}
}

// output is a review output document.
type output struct {
	Verdict        string           `json:"verdict"`
	VerdictReason  string           `json:"verdict_reason,omitempty"`
	ReviewMarkdown string           `json:"review_markdown,omitempty"`
	Findings       []map[string]any `json:"findings,omitempty"`
}

// writes returns a model that writes doc to the review file.
func writes(doc any) model {
	return func(n int, inv claude.Invocation) (claude.Result, error) {
		var data []byte
		switch d := doc.(type) {
		case string:
			data = []byte(d)
		default:
			var err error
			if data, err = json.Marshal(d); err != nil {
				return claude.Result{}, err
			}
		}
		if err := os.WriteFile(inv.Env[formula.EnvReviewFile], data, 0o600); err != nil {
			return claude.Result{}, err
		}
		return okResult(fmt.Sprintf("sess-%d", n)), nil
	}
}

func okResult(session string) claude.Result {
	return claude.Result{SessionID: session, Subtype: "success", HasResult: true, CostUSD: 0.12,
		Usage: claude.Usage{InputTokens: 1000, OutputTokens: 200}, NumTurns: 4, Text: "Review written."}
}
