package architect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea as disinto init leaves it for
// the architect: a human admin owning the project and its ops repository
// (who decides on sprints), an architect bot that reads the project and
// writes the ops repository, and another bot; the architect runs the real
// claude CLI against a scripted model server.
type rig struct {
	t        testing.TB
	human    forgetest.User
	bot      forgetest.User
	other    forgetest.User    // another bot of the factory
	repo     *forge.RepoClient // project, as the human
	opsRepo  *forge.RepoClient // ops, as the human
	botOps   *forge.RepoClient // ops, as the architect, through proxy
	proxy    *forgetest.Proxy
	model    *claudetest.Server
	modelURL string
	data     string
	proj     *config.Project
	led      *ledgertest.Memory
	rt       *agent.Runtime
	a        *Agent
	now      time.Time
	deciders []string
	// labeler, when set, is the identity that labels for the architect.
	labeler Labeler
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newRig(t testing.TB) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	srv := gitea.Get(t)
	r := &rig{t: t, data: sandboxtest.Dir(t, "architect"), led: &ledgertest.Memory{},
		now: time.Date(2026, 4, 15, 8, 7, 0, 0, time.UTC)}
	r.human = srv.NewUser(t, "disinto-admin")
	r.bot = srv.NewUser(t, "architect-bot")
	r.other = srv.NewUser(t, "dev-bot")
	r.deciders = []string{r.human.Login}
	r.repo = srv.NewRepo(t, r.human, "proj")
	r.opsRepo = srv.NewRepo(t, r.human, "proj-ops")
	ctx := ctxOf(t)
	if _, err := r.repo.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.repo.AddCollaborator(ctx, r.bot.Login, forge.PermRead); err != nil {
		t.Fatal(err)
	}
	for _, u := range []forgetest.User{r.bot, r.other} {
		if err := r.opsRepo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.repo.AddCollaborator(ctx, r.other.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if err := r.repo.CreateFiles(ctx, "main", "seed", []forge.NewFile{
		{Path: "VISION.md", Content: []byte("# Vision\n\nSell the product.\n")},
		{Path: "cmd/app/main.go", Content: []byte("package main\n")},
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.opsRepo.CreateFiles(ctx, "main", "layout", []forge.NewFile{
		{Path: "sprints/.gitkeep"}, {Path: "prerequisites.md", Content: []byte("# Prerequisite Tree\n")},
	}); err != nil {
		t.Fatal(err)
	}
	r.proxy = forgetest.NewProxy(t, srv.URL)
	c, err := forge.New(forge.Options{URL: r.proxy.URL, Token: r.bot.Token, User: r.bot.Login})
	if err != nil {
		t.Fatal(err)
	}
	r.botOps = c.Repo(r.opsRepo.Owner(), r.opsRepo.Name())
	r.model, r.modelURL = claudetest.Start(t)
	r.proj = &config.Project{Name: "proj", Repo: r.repo.Slug(), OpsRepo: r.opsRepo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main"}
	r.build()
	return r
}

// build (re)makes the runtime and the agent over the same data dir.
func (r *rig) build() {
	t := r.t
	t.Helper()
	runner, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: r.modelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(t),
		IdleGrace:     30 * time.Second,
		Timeout:       3 * time.Minute,
		TranscriptDir: filepath.Join(r.data, "transcripts"),
		Logger:        zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(r.data, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Load(formulas.FS, FormulaName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := forge.New(forge.Options{URL: r.proxy.URL, Token: r.bot.Token, User: r.bot.Login})
	if err != nil {
		t.Fatal(err)
	}
	botRepo := c.Repo(r.repo.Owner(), r.repo.Name())
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: r.proj.ForgeURL, Username: r.bot.Login, Password: r.bot.Password}})
	name, email := git.Identity(r.bot.Login)
	proposer := ops.Open(ops.Options{Git: g, URL: r.proj.ForgeURL + "/" + r.opsRepo.Slug() + ".git",
		Dir: filepath.Join(r.data, "ops"), Name: name, Email: email})
	r.rt = agent.New(agent.Options{Ledger: r.led, Log: zerolog.Nop(), Now: func() time.Time { return r.now }})
	rn := formulaagent.NewRunner(formulaagent.Options{Role: role, Project: r.proj.Name, Forge: botRepo,
		StateDir: filepath.Join(r.data, "state", "proj", "architect"), Formula: f, Claude: runner, Sandbox: sb,
		Timeout: 3 * time.Minute, Now: func() time.Time { return r.now }, Log: zerolog.Nop()})
	r.a = New(Options{Project: r.proj.Name, Forge: botRepo, Ops: r.botOps, Proposer: proposer, Labeler: r.labeler,
		Driver: rn, Sessions: claude.NewSessionStore(filepath.Join(r.data, "state"), nil),
		Deciders: r.deciders, Bots: []string{"architect-bot", "dev-bot", r.bot.Login, r.other.Login}, Filer: r.other.Login,
		Log: zerolog.Nop()})
}

// tick runs one architect pass as the daemon's runtime does.
func (r *rig) tick() error {
	r.t.Helper()
	ctx := ctxOf(r.t)
	err := r.rt.Tick(ctx, r.a, r.proj, config.RoleArchitect, agent.CauseManual)
	if werr := r.rt.Wait(ctx); werr != nil {
		r.t.Fatal(werr)
	}
	return err
}

func (r *rig) mustTick() {
	r.t.Helper()
	if err := r.tick(); err != nil {
		r.t.Fatalf("architect tick: %v", err)
	}
}

func (r *rig) vision(title, body string, labels ...forge.LabelName) forge.Issue {
	r.t.Helper()
	i, err := r.repo.CreateIssue(ctxOf(r.t), forge.NewIssue{Title: title, Body: body, Labels: append([]forge.LabelName{forge.LabelVision}, labels...)})
	if err != nil {
		r.t.Fatal(err)
	}
	return i
}

// pulls returns the ops repository's pull requests, any state, by number.
func (r *rig) pulls() []forge.PullRequest {
	r.t.Helper()
	ps, err := r.opsRepo.ListPulls(ctxOf(r.t), forge.StateAll)
	if err != nil {
		r.t.Fatal(err)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Number < ps[j].Number })
	return ps
}

// sprintOf returns the ops pull request whose marker names vision n,
// newest first; ok false when none.
func (r *rig) sprintOf(n int64) (forge.PullRequest, bool) {
	r.t.Helper()
	ps := r.pulls()
	for i := len(ps) - 1; i >= 0; i-- {
		if m, ok := forge.FindMarker(ps[i].Body, forge.MarkerSprint); ok && m.Fields["vision"] == fmt.Sprint(n) {
			return ps[i], true
		}
	}
	return forge.PullRequest{}, false
}

func (r *rig) mustSprint(n int64) forge.PullRequest {
	r.t.Helper()
	p, ok := r.sprintOf(n)
	if !ok {
		r.t.Fatalf("no sprint pull request for #%d", n)
	}
	return p
}

func (r *rig) opsComments(n int64) []forge.Comment {
	r.t.Helper()
	cs, err := r.opsRepo.ListComments(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

func (r *rig) comments(n int64) []forge.Comment {
	r.t.Helper()
	cs, err := r.repo.ListComments(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// say posts a comment on an ops pull request as u.
func (r *rig) say(u forgetest.User, pr int64, body string) forge.Comment {
	r.t.Helper()
	c, err := u.Client.Repo(r.opsRepo.Owner(), r.opsRepo.Name()).CreateComment(ctxOf(r.t), pr, body)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// sessions counts the model's message requests so far.
func (r *rig) sessions() int { return len(r.model.MessageRequests("")) }

// requests returns the model's message requests answered by scenario.
func (r *rig) requests(scenario string) []claudetest.Request {
	return r.model.MessageRequests(scenario)
}

// sprintDoc is a valid sprint document for vision n titled title.
func sprintDoc(n int64, title, extra string) string {
	return fmt.Sprintf(`# Sprint: %s

## Vision issues
- #%d — %s

## What this enables
Paying customers.

## What exists today
A web app.

## Complexity
Two sub-issues, mostly glue.

## Risks
Payment provider outages.

## Cost — new infra to maintain
One webhook endpoint.

## Recommendation
Worth it.
%s
## Sub-issues
<!-- filer:begin -->
- id: schema
  title: "vision(#%d): billing schema"
  labels: [backlog]
  depends_on: []
  body: |
    ## Goal
    Store invoices.

    ## Acceptance criteria
    - [ ] invoices table exists
- id: api
  title: "vision(#%d): billing API"
  labels: [backlog]
  depends_on: [schema]
  body: |
    ## Goal
    Serve invoices.

    ## Acceptance criteria
    - [ ] GET /invoices answers
<!-- filer:end -->
`, title, n, title, extra, n, n)
}

// writeOutbox is the Bash command a scripted session runs to write its
// outbox: the sprint document (none when doc is empty) and the reply.
func writeOutbox(doc, reply string) string {
	var b strings.Builder
	if doc != "" {
		b.WriteString("cat > \"$" + EnvSprint + "\" <<'SPRINT'\n" + doc + "SPRINT\n")
	}
	if reply != "" {
		b.WriteString("cat > \"$" + EnvReply + "\" <<'REPLY'\n" + reply + "\nREPLY\n")
	}
	return b.String()
}

// scenario is a scripted session selected by marker whose conversation
// already holds offset assistant turns (a resumed session continues the
// count): it runs cmd once, then ends.
func scenario(name, marker string, offset int, cmd string) claudetest.Scenario {
	turns := make([]claudetest.Turn, 0, offset+2)
	for range offset {
		turns = append(turns, claudetest.Text("this conversation was expected to be resumed"))
	}
	turns = append(turns, claudetest.Tools(claudetest.Bash(cmd)), claudetest.Text("done"))
	return claudetest.Scenario{Name: name, Marker: marker, Turns: turns}
}

// pitchScenario scripts the pitch of vision n titled title.
func pitchScenario(n int64, title string) claudetest.Scenario {
	return scenario(fmt.Sprintf("pitch-%d", n), fmt.Sprintf("Vision issue #%d: %s", n, title), 0,
		writeOutbox(sprintDoc(n, title, ""), `{"comments": [], "ready": false}`))
}

// followUpMarker selects a resumed design session of mode on pr.
func followUpMarker(mode Mode, pr int64) string {
	return fmt.Sprintf("Mode %q on sprint pull request #%d.", mode, pr)
}

func (r *rig) script(ss ...claudetest.Scenario) {
	r.t.Helper()
	if err := r.model.SetScenarios(ss...); err != nil {
		r.t.Fatal(err)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }
