// Package formulaagenttest is the test rig of the roles built on
// lib/formulaagent (gardener, predictor, planner): one project on a
// shared real Gitea with an owner and the role's bot, the real claude CLI
// against a scripted model server, a data dir the sessions may use, an
// in-memory ledger and the runtime that ticks the role as the daemon does.
//
// It is imported from tests only. The formula under test is loaded by
// the caller (lib never imports the formulas package).
package formulaagenttest

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

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

// Start is the rig's clock at creation: a fixed instant, so branch names
// and dates are known to the test.
var Start = time.Date(2026, 4, 15, 8, 7, 0, 0, time.UTC)

// Options says what project a rig makes.
type Options struct {
	// Role names the role under test; its bot's login starts with
	// Role+"-bot" and the data dir is named after it.
	Role string
	// Files are put on main in one commit (path → content); a seed file
	// is added when there are none.
	Files map[string]string
	// Users are more accounts made collaborators with write access
	// (login prefixes, e.g. "review-bot"), found in Rig.Users.
	Users []string
	// GitProxy routes the role's git traffic through a proxy of its own,
	// to see who pushes; otherwise git talks to the server directly.
	GitProxy bool
}

// Rig is one project of a formula-agent test.
type Rig struct {
	T   testing.TB
	Srv *forgetest.Server
	// Owner plays the humans; Bot is the role's bot, a collaborator.
	Owner, Bot forgetest.User
	Users      map[string]forgetest.User
	// Repo acts as the owner; BotRepo as the bot, through Proxy, which
	// counts the bot's API requests.
	Repo, BotRepo *forge.RepoClient
	Proxy         *forgetest.Proxy
	// GitProxy carries the bot's git traffic when Options.GitProxy.
	GitProxy *forgetest.Proxy
	Model    *claudetest.Server
	ModelURL string
	// Data is the data dir (sessions, clones, state, transcripts).
	Data    string
	Project *config.Project
	Ledger  *ledgertest.Memory
	// Now is the clock of the runtime and, through Clock, the agent.
	Now time.Time
	// Logs receives what Log writes.
	Logs    *SyncWriter
	Log     zerolog.Logger
	Runtime *agent.Runtime
	role    string
}

// Ctx returns a context that ends with t (at most five minutes).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// New makes the project of o on srv. It skips the test in -short mode:
// the real-Gitea suites run in the full test command.
func New(t testing.TB, srv *forgetest.Server, o Options) *Rig {
	t.Helper()
	r := &Rig{T: t, Srv: srv, Data: sandboxtest.Dir(t, o.Role), Ledger: &ledgertest.Memory{}, Now: Start,
		Logs: &SyncWriter{}, Users: map[string]forgetest.User{}, role: o.Role}
	r.Log = zerolog.New(r.Logs).Level(zerolog.DebugLevel)
	r.Owner = srv.NewUser(t, "owner")
	r.Bot = srv.NewUser(t, o.Role+"-bot")
	r.Repo = srv.NewRepo(t, r.Owner, "proj")
	ctx := Ctx(t)
	if _, err := r.Repo.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	collab := []forgetest.User{r.Bot}
	for _, prefix := range o.Users {
		u := srv.NewUser(t, prefix)
		r.Users[prefix] = u
		collab = append(collab, u)
	}
	for _, u := range collab {
		if err := r.Repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
			t.Fatal(err)
		}
	}
	files := o.Files
	if len(files) == 0 {
		files = map[string]string{"docs/seed.md": "proj\n"}
	}
	var all []forge.NewFile
	for p, c := range files {
		all = append(all, forge.NewFile{Path: p, Content: []byte(c)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	if err := r.Repo.CreateFiles(ctx, "main", "seed", all); err != nil {
		t.Fatal(err)
	}
	r.Proxy = forgetest.NewProxy(t, srv.URL)
	r.BotRepo = r.ClientVia(r.Proxy.URL)
	if o.GitProxy {
		r.GitProxy = forgetest.NewProxy(t, srv.URL)
	}
	r.Model, r.ModelURL = claudetest.Start(t)
	r.Project = &config.Project{Name: "proj", Repo: r.Repo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main"}
	r.NewRuntime(nil)
	return r
}

// ClientVia is a client of the project's repository acting as the bot,
// talking to url.
func (r *Rig) ClientVia(url string) *forge.RepoClient {
	r.T.Helper()
	return r.BotClient(url).Repo(r.Repo.Owner(), r.Repo.Name())
}

// BotClient is a client acting as the bot, talking to url.
func (r *Rig) BotClient(url string) *forge.Client {
	r.T.Helper()
	c, err := forge.New(forge.Options{URL: url, Token: r.Bot.Token, User: r.Bot.Login})
	if err != nil {
		r.T.Fatal(err)
	}
	return c
}

// Clock is the agent's clock: the rig's Now.
func (r *Rig) Clock() time.Time { return r.Now }

// NewRuntime (re)makes the runtime that ticks the role, with enable as
// its record of paused roles (nil: none paused).
func (r *Rig) NewRuntime(enable *agent.Enablement) {
	r.Runtime = agent.New(agent.Options{Ledger: r.Ledger, Log: r.Log, Enablement: enable, Now: r.Clock})
}

// Claude is the real claude CLI against the rig's scripted model.
func (r *Rig) Claude() claude.Runner {
	t := r.T
	t.Helper()
	runner, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: r.ModelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(t),
		IdleGrace:     30 * time.Second,
		Timeout:       3 * time.Minute,
		TranscriptDir: filepath.Join(r.Data, "transcripts"),
		Logger:        zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

// Sandbox is the sessions' sandbox under the data dir.
func (r *Rig) Sandbox() *sandbox.Sandbox {
	r.T.Helper()
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(r.Data, "sessions")})
	if err != nil {
		r.T.Fatal(err)
	}
	return sb
}

// GitURL is the forge URL the bot's git talks to.
func (r *Rig) GitURL() string {
	if r.GitProxy != nil {
		return r.GitProxy.URL
	}
	return r.Srv.URL
}

// Git is git with the bot's credentials for GitURL.
func (r *Rig) Git() *git.Git {
	return git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: r.GitURL(), Username: r.Bot.Login, Password: r.Bot.Password}})
}

// FormulaRunner is the role's runtime with formula f: the bot's clone
// and the state dir under the data dir, the real CLI, the sandbox,
// BotRepo for its pull requests and the rig's clock.
func (r *Rig) FormulaRunner(f *formula.Formula) *formulaagent.Driver {
	return formulaagent.NewRunner(formulaagent.Options{Role: r.role, Project: r.Project.Name, Git: r.Git(),
		URL: r.GitURL() + "/" + r.Repo.Slug() + ".git", CloneDir: filepath.Join(r.Data, "clone"), Primary: "main",
		Bot: r.Bot.Login, Forge: r.BotRepo, StateDir: r.StateDir(), Formula: f, Now: r.Clock,
		Claude: r.Claude(), Sandbox: r.Sandbox(), Timeout: 3 * time.Minute, Log: zerolog.Nop()})
}

// StateDir is the role's state directory under the data dir.
func (r *Rig) StateDir() string { return filepath.Join(r.Data, "state") }

// Tick runs one pass of a as role, as the daemon's runtime does, and
// waits for the work it started.
func (r *Rig) Tick(a agent.Agent, role config.Role) error {
	r.T.Helper()
	ctx := Ctx(r.T)
	err := r.Runtime.Tick(ctx, a, r.Project, role, agent.CauseManual)
	if werr := r.Runtime.Wait(ctx); werr != nil {
		r.T.Fatal(werr)
	}
	return err
}

// MustTick is Tick, failing the test on an error.
func (r *Rig) MustTick(a agent.Agent, role config.Role) {
	r.T.Helper()
	if err := r.Tick(a, role); err != nil {
		r.T.Fatalf("%s tick: %v", role, err)
	}
}

// Issue files an issue as the owner.
func (r *Rig) Issue(title, body string, labels ...forge.LabelName) forge.Issue {
	r.T.Helper()
	i, err := r.Repo.CreateIssue(Ctx(r.T), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		r.T.Fatal(err)
	}
	return i
}

// Get reads issue n.
func (r *Rig) Get(n int64) forge.Issue {
	r.T.Helper()
	i, err := r.Repo.GetIssue(Ctx(r.T), n)
	if err != nil {
		r.T.Fatal(err)
	}
	return i
}

// CloseIssue closes issue n as the owner.
func (r *Rig) CloseIssue(n int64) {
	r.T.Helper()
	if err := r.Repo.CloseIssue(Ctx(r.T), n); err != nil {
		r.T.Fatal(err)
	}
}

// Comments lists the comments of issue n.
func (r *Rig) Comments(n int64) []forge.Comment {
	r.T.Helper()
	cs, err := r.Repo.ListComments(Ctx(r.T), n)
	if err != nil {
		r.T.Fatal(err)
	}
	return cs
}

// ByBot returns every issue the bot authored, any state, oldest first.
func (r *Rig) ByBot() []forge.Issue {
	r.T.Helper()
	all, err := r.Repo.ListIssues(Ctx(r.T), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		r.T.Fatal(err)
	}
	var out []forge.Issue
	for _, i := range all {
		if strings.EqualFold(i.Author, r.Bot.Login) {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Number < out[b].Number })
	return out
}

// Script makes every session of the model run blocks in one turn, then
// say "done" (no blocks: only "done").
func (r *Rig) Script(blocks ...claudetest.Block) {
	r.T.Helper()
	var turns []claudetest.Turn
	if len(blocks) > 0 {
		turns = append(turns, claudetest.Tools(blocks...))
	}
	turns = append(turns, claudetest.Text("done"))
	if err := r.Model.SetScenarios(claudetest.Scenario{Name: r.role, Default: true, Turns: turns}); err != nil {
		r.T.Fatal(err)
	}
}

// WriteEnvFile is a tool call writing content to the file named by the
// session's environment variable env (an outbox).
func WriteEnvFile(env, content string) claudetest.Block {
	return claudetest.Bash("cat > \"$" + env + "\" <<'JSON'\n" + content + "\nJSON")
}

// Sessions counts the model requests so far.
func (r *Rig) Sessions() int { return len(r.Model.MessageRequests("")) }

// Prompt returns the user text of the first model request.
func (r *Rig) Prompt() string {
	r.T.Helper()
	reqs := r.Model.MessageRequests("")
	if len(reqs) == 0 {
		r.T.Fatal("no model request")
	}
	return strings.Join(reqs[0].Texts, "\n")
}

// Prompts returns the user text of every session's first request, in
// order.
func (r *Rig) Prompts() []string {
	var out []string
	for _, q := range r.Model.MessageRequests("") {
		if q.Turn == 0 {
			out = append(out, strings.Join(q.Texts, "\n"))
		}
	}
	return out
}

// LastRecord is the newest ledger record as "code | detail".
func (r *Rig) LastRecord() string {
	r.T.Helper()
	recs := r.Ledger.Records()
	if len(recs) == 0 {
		r.T.Fatal("no ledger record")
	}
	l := recs[len(recs)-1]
	return string(l.Code) + " | " + l.Detail
}

// SyncWriter is a log sink safe for the runtime's goroutines.
type SyncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (w *SyncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String returns what was written.
func (w *SyncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
