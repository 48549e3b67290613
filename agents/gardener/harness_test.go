package gardener

import (
	"context"
	"os"
	"path/filepath"
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
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea: an owner (who plays humans and
// merges), a gardener bot collaborator, a primary branch holding an empty
// manifest and an AGENTS.md, and a gardener agent acting as the bot with
// the real claude CLI against a scripted model server.
type rig struct {
	t     testing.TB
	srv   *forgetest.Server
	owner forgetest.User
	bot   forgetest.User
	// reviewer plays the review bot.
	reviewer forgetest.User
	repo     *forge.RepoClient // as the owner
	botRepo  *forge.RepoClient // as the gardener bot
	model    *claudetest.Server
	modelURL string
	proxy    *forgetest.Proxy
	// gitProxy carries the agent's git traffic, to see who pushes.
	gitProxy *forgetest.Proxy
	data     string
	proj     *config.Project
	led      *ledgertest.Memory
	rt       *agent.Runtime
	a        *Agent
	now      time.Time
	hooks    Hooks
	// probe are shell commands the scripted session runs first.
	probe []string
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newRig makes the project with files (besides the manifest) on main.
func newRig(t testing.TB, files map[string]string) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	srv := gitea.Get(t)
	r := &rig{t: t, srv: srv, data: sandboxtest.Dir(t, "gardener"), led: &ledgertest.Memory{},
		now: time.Date(2026, 4, 15, 8, 7, 0, 0, time.UTC)}
	r.owner = srv.NewUser(t, "owner")
	r.bot = srv.NewUser(t, "gardener-bot")
	r.reviewer = srv.NewUser(t, "review-bot")
	r.repo = srv.NewRepo(t, r.owner, "proj")
	ctx := ctxOf(t)
	if _, err := r.repo.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []forgetest.User{r.bot, r.reviewer} {
		if err := r.repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
			t.Fatal(err)
		}
	}
	all := []forge.NewFile{{Path: ManifestFile, Content: []byte("[]\n")}}
	for p, c := range files {
		all = append(all, forge.NewFile{Path: p, Content: []byte(c)})
	}
	if err := r.repo.CreateFiles(ctx, "main", "seed", all); err != nil {
		t.Fatal(err)
	}
	r.proxy = forgetest.NewProxy(t, srv.URL)
	r.botRepo = r.clientVia(r.proxy.URL)
	r.gitProxy = forgetest.NewProxy(t, srv.URL)
	r.model, r.modelURL = claudetest.Start(t)
	r.rt = agent.New(agent.Options{Ledger: r.led, Log: zerolog.Nop(), Now: func() time.Time { return r.now }})
	r.proj = &config.Project{Name: "proj", Repo: r.repo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main"}
	r.build()
	return r
}

// clientVia is a client of the repository acting as the gardener bot,
// talking to url.
func (r *rig) clientVia(url string) *forge.RepoClient {
	r.t.Helper()
	c, err := forge.New(forge.Options{URL: url, Token: r.bot.Token, User: r.bot.Login})
	if err != nil {
		r.t.Fatal(err)
	}
	return c.Repo(r.repo.Owner(), r.repo.Name())
}

// build (re)makes the agent, as a restarted daemon would, over the same
// data dir.
func (r *rig) build() {
	t := r.t
	t.Helper()
	modelURL := r.modelURL
	runner, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: modelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
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
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: r.gitProxy.URL, Username: r.bot.Login, Password: r.bot.Password}})
	fr := formulaagent.NewRunner(formulaagent.Options{Role: "gardener", Project: r.proj.Name, Git: g,
		URL: r.gitProxy.URL + "/" + r.repo.Slug() + ".git", CloneDir: filepath.Join(r.data, "clone"), Primary: "main",
		Bot: r.bot.Login, Forge: r.botRepo, Claude: runner, Sandbox: sb, Timeout: 3 * time.Minute, Log: zerolog.Nop()})
	r.a = New(Options{Project: r.proj.Name, Primary: "main", Forge: r.botRepo, Runner: fr, Formula: f,
		StateDir: filepath.Join(r.data, "state"), Hooks: r.hooks, ReviewBot: r.reviewer.Login, Now: func() time.Time { return r.now }, Log: zerolog.Nop()})
}

// tick runs one gardener pass as the daemon's runtime does.
func (r *rig) tick() error {
	r.t.Helper()
	ctx := ctxOf(r.t)
	err := r.rt.Tick(ctx, r.a, r.proj, config.RoleGardener, agent.CauseManual)
	if werr := r.rt.Wait(ctx); werr != nil {
		r.t.Fatal(werr)
	}
	return err
}

func (r *rig) mustTick() {
	r.t.Helper()
	if err := r.tick(); err != nil {
		r.t.Fatalf("gardener tick: %v", err)
	}
}

func (r *rig) issue(title, body string, labels ...forge.LabelName) forge.Issue {
	r.t.Helper()
	i, err := r.repo.CreateIssue(ctxOf(r.t), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		r.t.Fatal(err)
	}
	return i
}

func (r *rig) get(n int64) forge.Issue {
	r.t.Helper()
	i, err := r.repo.GetIssue(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return i
}

func (r *rig) closeIssue(n int64) {
	r.t.Helper()
	if err := r.repo.CloseIssue(ctxOf(r.t), n); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) comments(n int64) []forge.Comment {
	r.t.Helper()
	cs, err := r.repo.ListComments(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// openPull returns the open gardener pull request, failing without one.
func (r *rig) openPull() forge.PullRequest {
	r.t.Helper()
	ps, err := r.repo.ListPulls(ctxOf(r.t), forge.StateOpen)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, p := range ps {
		if strings.HasPrefix(p.Head, branchPrefix) {
			return p
		}
	}
	r.t.Fatal("no open gardener pull request")
	return forge.PullRequest{}
}

// pullCount counts gardener pull requests in any state.
func (r *rig) pullCount() int {
	r.t.Helper()
	ps, err := r.repo.ListPulls(ctxOf(r.t), forge.StateAll)
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, p := range ps {
		if p.Title == Title {
			n++
		}
	}
	return n
}

// manifestOf reads the manifest a pull request's head carries.
func (r *rig) manifestOf(p forge.PullRequest) Manifest {
	r.t.Helper()
	f, err := r.repo.GetFile(ctxOf(r.t), ManifestFile, p.HeadSHA)
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := ParseManifest(f.Content)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// merge merges p as the owner (a human, or the dev bot in tests/e2e).
func (r *rig) merge(p forge.PullRequest) string {
	r.t.Helper()
	ctx := ctxOf(r.t)
	if err := r.repo.Merge(ctx, p.Number, forge.MergeOptions{HeadSHA: p.HeadSHA, DeleteBranch: true}); err != nil {
		r.t.Fatal(err)
	}
	got, err := r.repo.GetPull(ctx, p.Number)
	if err != nil {
		r.t.Fatal(err)
	}
	return got.MergedSHA
}

// script makes the model's one session write proposals and files (path
// relative to the working directory → content).
func (r *rig) script(proposals string, files map[string]string) {
	r.t.Helper()
	var blocks []claudetest.Block
	for _, c := range r.probe {
		blocks = append(blocks, claudetest.Bash(c))
	}
	if proposals != "" {
		blocks = append(blocks, claudetest.Bash("cat > \"$DISINTO_GARDENER_PROPOSALS\" <<'JSON'\n"+proposals+"\nJSON"))
	}
	for p, c := range files {
		blocks = append(blocks, claudetest.Write("{{.Cwd}}/"+p, c))
	}
	turns := []claudetest.Turn{}
	if len(blocks) > 0 {
		turns = append(turns, claudetest.Tools(blocks...))
	}
	turns = append(turns, claudetest.Text("done"))
	if err := r.model.SetScenarios(claudetest.Scenario{Name: "gardener", Default: true, Turns: turns}); err != nil {
		r.t.Fatal(err)
	}
}

// sessions counts the model requests so far.
func (r *rig) sessions() int { return len(r.model.MessageRequests("")) }

func hasLabel(i forge.Issue, l forge.LabelName) bool { return i.HasLabel(l) }
