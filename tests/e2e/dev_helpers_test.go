// Package e2e holds end-to-end tests across the whole system: the real
// Gitea server (lib/forge/forgetest) and the real claude CLI against the
// scripted model server (lib/claude/claudetest).
package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
)

// devEnv is one project on a real Gitea with a dev bot, a reviewer and a
// scripted model.
type devEnv struct {
	t        testing.TB
	srv      *forgetest.Server
	owner    forgetest.User
	reviewer forgetest.User
	repo     *forge.RepoClient // as the owner (plays CI and humans)
	model    *claudetest.Server
	modelURL string
	mirror   string
}

func newDevEnv(t testing.TB, scenarios ...claudetest.Scenario) *devEnv {
	t.Helper()
	e := &devEnv{t: t, srv: forgetest.Start(t)}
	e.model, e.modelURL = claudetest.Start(t, scenarios...)
	e.owner = e.srv.NewUser(t, "owner")
	e.reviewer = e.srv.NewUser(t, "review-bot")
	e.repo = e.srv.NewRepo(t, e.owner, "proj")
	ctx := testCtx(t)
	if _, err := e.repo.EnsureLabels(ctx); err != nil {
		t.Fatalf("labels: %v", err)
	}
	if err := e.repo.AddCollaborator(ctx, e.reviewer.Login, forge.PermWrite); err != nil {
		t.Fatalf("collaborator: %v", err)
	}
	e.mirror = filepath.Join(t.TempDir(), "mirror.git")
	runGit(t, "", "init", "-q", "--bare", e.mirror)
	return e
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// botParams is everything needed to run one daemon's dev agent; it is
// passed as JSON to a child process in the crash test.
type botParams struct {
	ForgeURL, Owner, Repo, Login, Password, Token string
	ModelURL, Data, ReviewBot, Mirror             string
}

// devBot is one daemon's dev agent: its own user, data dir and runtime.
type devBot struct {
	t    testing.TB
	p    botParams
	user forgetest.User
	data string
	rt   *agent.Runtime
	a    *dev.Agent
	proj *config.Project
	// opts built a; runner and git are its model runner and git backend.
	opts   dev.Options
	runner claude.Runner
	git    *dev.Git
}

// rebuild replaces the agent with one built from modified options.
func (b *devBot) rebuild(mod func(*dev.Options)) {
	b.t.Helper()
	mod(&b.opts)
	a, err := dev.New(b.opts)
	if err != nil {
		b.t.Fatal(err)
	}
	b.a = a
}

func (e *devEnv) newBot(prefix string) *devBot {
	e.t.Helper()
	u := e.srv.NewUser(e.t, prefix)
	if err := e.repo.AddCollaborator(testCtx(e.t), u.Login, forge.PermWrite); err != nil {
		e.t.Fatalf("collaborator: %v", err)
	}
	p := botParams{ForgeURL: e.srv.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login,
		Password: u.Password, Token: u.Token, ModelURL: e.modelURL, Data: e.t.TempDir(),
		ReviewBot: e.reviewer.Login, Mirror: e.mirror}
	b := startBot(e.t, p)
	b.user = u
	return b
}

// startBot builds the agent and runtime as a (re)started daemon does.
func startBot(t testing.TB, p botParams) *devBot {
	t.Helper()
	led, err := ledger.Open(filepath.Join(p.Data, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	b := &devBot{t: t, p: p, data: p.Data, user: forgetest.User{Login: p.Login, Password: p.Password, Token: p.Token}}
	b.rt = agent.New(agent.Options{Ledger: led, Log: zerolog.Nop()})
	b.proj = &config.Project{Name: "proj", Repo: p.Owner + "/" + p.Repo, PrimaryBranch: "main"}
	runner, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: p.ModelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(t),
		IdleGrace:     30 * time.Second,
		Timeout:       4 * time.Minute,
		TranscriptDir: filepath.Join(p.Data, "transcripts"),
		Logger:        zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: p.Token, User: p.Login})
	if err != nil {
		t.Fatal(err)
	}
	g := dev.NewGit(dev.GitOptions{
		Clone:     filepath.Join(p.Data, "clones", "proj"),
		RemoteURL: fmt.Sprintf("%s/%s/%s.git", p.ForgeURL, p.Owner, p.Repo), ForgeURL: p.ForgeURL,
		User: p.Login, Password: p.Password, Primary: "main",
	})
	b.runner, b.git = runner, g
	b.opts = dev.Options{
		Project: "proj", Repo: p.Owner + "/" + p.Repo, PrimaryBranch: "main", CISystem: config.CIStatuses,
		Mirrors: map[string]string{"backup": p.Mirror},
		Forge:   fc.Repo(p.Owner, p.Repo), Claude: runner, Git: g, Formula: f, DataDir: p.Data,
		ReviewBot: p.ReviewBot, Secrets: []string{p.Token, p.Password},
		Limits: dev.Limits{MaxTurns: 20, SessionTimeout: 4 * time.Minute}, Log: zerolog.Nop(),
	}
	b.rebuild(func(*dev.Options) {})
	return b
}

// tick runs one pass and waits for the sessions it started.
func (b *devBot) tick() {
	t := b.t
	t.Helper()
	ctx := testCtx(t)
	if err := b.rt.Tick(ctx, b.a, b.proj, config.RoleDev, agent.CauseManual); err != nil {
		t.Fatalf("tick: %v", err)
	}
	if err := b.rt.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
}

func (b *devBot) stage(n int64) dev.Stage {
	st, ok, err := b.a.State(n)
	if err != nil {
		b.t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return st.Stage
}

// tickUntil ticks until cond holds, at most max times.
func (b *devBot) tickUntil(what string, max int, cond func() bool) {
	b.t.Helper()
	for i := 0; i < max; i++ {
		b.tick()
		if cond() {
			return
		}
	}
	b.t.Fatalf("after %d ticks: %s did not happen", max, what)
}

func (b *devBot) records() []ledger.Record {
	recs, _, err := ledger.Read(filepath.Join(b.data, "ledger"), ledger.Filter{})
	if err != nil {
		b.t.Fatal(err)
	}
	return recs
}

func (e *devEnv) issue(title, body string, labels ...forge.LabelName) int64 {
	e.t.Helper()
	i, err := e.repo.CreateIssue(testCtx(e.t), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		e.t.Fatalf("create issue: %v", err)
	}
	return i.Number
}

func (e *devEnv) getIssue(n int64) forge.Issue {
	e.t.Helper()
	i, err := e.repo.GetIssue(testCtx(e.t), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return i
}

// pullFor returns the pull requests (any state) whose head is branch.
func (e *devEnv) pullsFor(branch string) []forge.PullRequest {
	e.t.Helper()
	ps, err := e.repo.ListPulls(testCtx(e.t), forge.StateAll)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []forge.PullRequest
	for _, p := range ps {
		if p.Head == branch {
			out = append(out, p)
		}
	}
	return out
}

// allPulls returns every pull request of the repository. (A merged pull
// request whose branch was deleted no longer reports its head branch.)
func (e *devEnv) allPulls() []forge.PullRequest {
	e.t.Helper()
	ps, err := e.repo.ListPulls(testCtx(e.t), forge.StateAll)
	if err != nil {
		e.t.Fatal(err)
	}
	return ps
}

func (e *devEnv) onlyPull(branch string) forge.PullRequest {
	e.t.Helper()
	ps := e.pullsFor(branch)
	if len(ps) != 1 {
		e.t.Fatalf("%d pull requests for %s, want 1", len(ps), branch)
	}
	return ps[0]
}

// ci posts a commit status on the pull request's head, as a CI would.
func (e *devEnv) ci(pr forge.PullRequest, st forge.CIState, desc string) {
	e.t.Helper()
	if err := e.repo.CreateStatus(testCtx(e.t), pr.HeadSHA, forge.CommitStatus{
		Context: "ci/test", State: st, Description: desc, TargetURL: e.srv.URL + "/ci/pipeline/7",
	}); err != nil {
		e.t.Fatal(err)
	}
}

// review submits a formal review as the review bot on the current head.
func (e *devEnv) review(pr forge.PullRequest, ev forge.ReviewEvent, body string) {
	e.t.Helper()
	rc := e.reviewer.Client.Repo(e.repo.Owner(), e.repo.Name())
	if _, err := rc.CreateReview(testCtx(e.t), pr.Number, forge.NewReview{Event: ev, Body: body, CommitID: pr.HeadSHA}); err != nil {
		e.t.Fatalf("review: %v", err)
	}
}

func (e *devEnv) pull(n int64) forge.PullRequest {
	e.t.Helper()
	p, err := e.repo.GetPull(testCtx(e.t), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func hasComment(t testing.TB, r *forge.RepoClient, n int64, sub string) bool {
	t.Helper()
	cs, err := r.ListComments(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.Contains(c.Body, sub) {
			return true
		}
	}
	return false
}

// Model scripts. Every Bash step runs in the session's worktree with the
// session's environment (DISINTO_PHASE_FILE, git credentials).
func implement(file, content string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(
		`printf '%%s\n' %q >> %s && git add %s && git commit -q -m "fix: change (#$DISINTO_ISSUE)" && git push -q origin HEAD && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo pushed`,
		content, file, file)))
}

func refuse(json string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(`printf '%%s' %q > "$DISINTO_RESULT_FILE" && echo refused`, json)))
}

func branch(n int64) string { return fmt.Sprintf("fix/issue-%d", n) }
