package predictor

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
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
// the planner), a predictor bot collaborator, a primary branch, an ops
// tree, and a predictor acting as the bot with the real claude CLI
// against a scripted model server.
type rig struct {
	t        testing.TB
	owner    forgetest.User
	bot      forgetest.User
	repo     *forge.RepoClient // as the owner
	botRepo  *forge.RepoClient // as the predictor bot, through proxy
	proxy    *forgetest.Proxy
	model    *claudetest.Server
	modelURL string
	data     string
	proj     *config.Project
	led      *ledgertest.Memory
	rt       *agent.Runtime
	a        *Agent
	now      time.Time
	ops      fstest.MapFS
	opsHead  string
	vault    *recordingVault
	// enable, when set, is the runtime's record of paused roles.
	enable *agent.Enablement
	logw   *syncWriter
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newRig makes the project with files on main.
func newRig(t testing.TB, files map[string]string) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	srv := gitea.Get(t)
	r := &rig{t: t, data: sandboxtest.Dir(t, "predictor"), led: &ledgertest.Memory{},
		now: time.Date(2026, 4, 15, 8, 7, 0, 0, time.UTC), ops: fstest.MapFS{}, opsHead: "ops1",
		vault: &recordingVault{}, logw: &syncWriter{b: &strings.Builder{}}}
	r.owner = srv.NewUser(t, "owner")
	r.bot = srv.NewUser(t, "predictor-bot")
	r.repo = srv.NewRepo(t, r.owner, "proj")
	ctx := ctxOf(t)
	if _, err := r.repo.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.repo.AddCollaborator(ctx, r.bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	all := []forge.NewFile{{Path: "docs/seed.md", Content: []byte("proj\n")}}
	for p, c := range files {
		all = append(all, forge.NewFile{Path: p, Content: []byte(c)})
	}
	if err := r.repo.CreateFiles(ctx, "main", "seed", all); err != nil {
		t.Fatal(err)
	}
	r.proxy = forgetest.NewProxy(t, srv.URL)
	c, err := forge.New(forge.Options{URL: r.proxy.URL, Token: r.bot.Token, User: r.bot.Login})
	if err != nil {
		t.Fatal(err)
	}
	r.botRepo = c.Repo(r.repo.Owner(), r.repo.Name())
	r.model, r.modelURL = claudetest.Start(t)
	r.proj = &config.Project{Name: "proj", Repo: r.repo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main"}
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
	srvURL := r.proj.ForgeURL
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: srvURL, Username: r.bot.Login, Password: r.bot.Password}})
	fr := formulaagent.NewRunner(formulaagent.Options{Role: role, Project: r.proj.Name, Git: g,
		URL: srvURL + "/" + r.repo.Slug() + ".git", CloneDir: filepath.Join(r.data, "clone"), Primary: "main",
		Bot: r.bot.Login, Forge: r.botRepo, Claude: runner, Sandbox: sb, Timeout: 3 * time.Minute, Log: zerolog.Nop()})
	log := zerolog.New(r.logw).Level(zerolog.DebugLevel)
	r.rt = agent.New(agent.Options{Ledger: r.led, Log: log, Enablement: r.enable, Now: func() time.Time { return r.now }})
	r.a = New(Options{Project: r.proj.Name, Primary: "main", Forge: r.botRepo, Runner: fr, Formula: f,
		Formulas: []string{"run-gardener", "run-predictor", "run-red-team"}, Ops: mapOps{r}, Vault: r.vault,
		StateDir: filepath.Join(r.data, "state"), Now: func() time.Time { return r.now }, Log: log})
}

// syncWriter is a log sink safe for the runtime's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// logs returns what the rig's loggers wrote.
func (r *rig) logs() string {
	r.logw.mu.Lock()
	defer r.logw.mu.Unlock()
	return r.logw.b.String()
}

// mapOps serves the rig's ops tree.
type mapOps struct{ r *rig }

func (o mapOps) Snapshot(context.Context) (OpsTree, string, error) {
	fsys := o.r.ops
	return OpsTree{FS: fsys, List: func(dir string) ([]string, error) {
		var out []string
		for p := range fsys {
			if path.Dir(p) == dir {
				out = append(out, p)
			}
		}
		sort.Strings(out)
		return out, nil
	}}, o.r.opsHead, nil
}

// recordingVault records the typed requests the predictor makes and
// answers with a pull request number of its own counting; lib/vault's
// requester stands behind the same interface in the daemon.
type recordingVault struct {
	mu   sync.Mutex
	reqs []VaultRequest
	// refuse, when set, is the answer to every request.
	refuse error
}

func (v *recordingVault) Request(_ context.Context, q VaultRequest) (VaultReceipt, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reqs = append(v.reqs, q)
	if v.refuse != nil {
		return VaultReceipt{}, v.refuse
	}
	return VaultReceipt{PR: int64(100 + len(v.reqs))}, nil
}

// tick runs one predictor pass as the daemon's runtime does.
func (r *rig) tick() error {
	r.t.Helper()
	ctx := ctxOf(r.t)
	err := r.rt.Tick(ctx, r.a, r.proj, config.RolePredictor, agent.CauseManual)
	if werr := r.rt.Wait(ctx); werr != nil {
		r.t.Fatal(werr)
	}
	return err
}

func (r *rig) mustTick() {
	r.t.Helper()
	if err := r.tick(); err != nil {
		r.t.Fatalf("predictor tick: %v", err)
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

// byBot returns every issue the predictor bot authored, any state.
func (r *rig) byBot() []forge.Issue {
	r.t.Helper()
	all, err := r.repo.ListIssues(ctxOf(r.t), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []forge.Issue
	for _, i := range all {
		if strings.EqualFold(i.Author, r.bot.Login) {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Number < out[b].Number })
	return out
}

// script makes the model's one session write the proposals.
func (r *rig) script(ps ...Proposal) {
	r.t.Helper()
	data, err := json.Marshal(Proposals{Proposals: ps})
	if err != nil {
		r.t.Fatal(err)
	}
	r.scriptRaw(string(data))
}

func (r *rig) scriptRaw(out string) {
	r.t.Helper()
	turns := []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$" + EnvProposals + "\" <<'JSON'\n" + out + "\nJSON")),
		claudetest.Text("done"),
	}
	if err := r.model.SetScenarios(claudetest.Scenario{Name: "predictor", Default: true, Turns: turns}); err != nil {
		r.t.Fatal(err)
	}
}

// sessions counts the model requests so far.
func (r *rig) sessions() int { return len(r.model.MessageRequests("")) }

// prompt returns the first message request's user text.
func (r *rig) prompt() string {
	r.t.Helper()
	reqs := r.model.MessageRequests("")
	if len(reqs) == 0 {
		r.t.Fatal("no model request")
	}
	return strings.Join(reqs[0].Texts, "\n")
}

// lastRecord is the newest ledger record.
func (r *rig) lastRecord() string {
	r.t.Helper()
	recs := r.led.Records()
	if len(recs) == 0 {
		r.t.Fatal("no ledger record")
	}
	l := recs[len(recs)-1]
	return string(l.Code) + " | " + l.Detail
}

func explore(title, theory string) Proposal {
	return Proposal{Kind: Explore, Title: title, Observation: "Seen: " + title + ".", Theory: theory,
		Confidence: "low", EvidenceChecked: "evidence/ and the tree", SuggestedAction: "Gather evidence first."}
}

func exploit(title, theory, formula string) Proposal {
	p := explore(title, theory)
	p.Kind, p.Confidence, p.Formula, p.Focus = Exploit, "high", formula, "try to break the launch claim"
	return p
}
