package gardener

import (
	"context"

	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent/formulaagenttest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea (formulaagenttest.Rig): an
// owner (who plays humans and merges), a gardener bot and a review bot
// collaborator, a primary branch holding an empty manifest and an
// AGENTS.md, and a gardener agent acting as the bot with the real claude
// CLI against a scripted model server.
type rig struct {
	*formulaagenttest.Rig
	// reviewer plays the review bot.
	reviewer forgetest.User
	a        *Agent
	hooks    Hooks
	// probe are shell commands the scripted session runs first.
	probe []string
}

func ctxOf(t testing.TB) context.Context { return formulaagenttest.Ctx(t) }

// newRig makes the project with files (besides the manifest) on main.
func newRig(t testing.TB, files map[string]string) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	all := map[string]string{ManifestFile: "[]\n"}
	for p, c := range files {
		all[p] = c
	}
	r := &rig{Rig: formulaagenttest.New(t, gitea.Get(t), formulaagenttest.Options{Role: role, Files: all,
		Users: []string{"review-bot"}, GitProxy: true})}
	r.reviewer = r.Users["review-bot"]
	r.build()
	return r
}

// build (re)makes the agent, as a restarted daemon would, over the same
// data dir.
func (r *rig) build() {
	r.T.Helper()
	f, err := formula.Load(formulas.FS, FormulaName)
	if err != nil {
		r.T.Fatal(err)
	}
	r.a = New(Options{Project: r.Project.Name, Primary: "main", Forge: r.BotRepo, Driver: r.FormulaRunner(f),
		Hooks: r.hooks, ReviewBot: r.reviewer.Login, Log: zerolog.Nop()})
}

// mustTick runs one pass as the daemon's runtime does, failing on an error.
func (r *rig) mustTick() { r.T.Helper(); r.MustTick(r.a, config.RoleGardener) }

// openPull returns the open gardener pull request, failing without one.
func (r *rig) openPull() forge.PullRequest {
	r.T.Helper()
	ps, err := r.Repo.ListPulls(ctxOf(r.T), forge.StateOpen)
	if err != nil {
		r.T.Fatal(err)
	}
	for _, p := range ps {
		if strings.HasPrefix(p.Head, branchPrefix) {
			return p
		}
	}
	r.T.Fatal("no open gardener pull request")
	return forge.PullRequest{}
}

// pullCount counts gardener pull requests in any state.
func (r *rig) pullCount() int {
	r.T.Helper()
	ps, err := r.Repo.ListPulls(ctxOf(r.T), forge.StateAll)
	if err != nil {
		r.T.Fatal(err)
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
	r.T.Helper()
	f, err := r.Repo.GetFile(ctxOf(r.T), ManifestFile, p.HeadSHA)
	if err != nil {
		r.T.Fatal(err)
	}
	m, err := ParseManifest(f.Content)
	if err != nil {
		r.T.Fatal(err)
	}
	return m
}

// merge merges p as the owner (a human, or the dev bot in tests/e2e).
func (r *rig) merge(p forge.PullRequest) string {
	r.T.Helper()
	ctx := ctxOf(r.T)
	if err := r.Repo.Merge(ctx, p.Number, forge.MergeOptions{HeadSHA: p.HeadSHA, DeleteBranch: true}); err != nil {
		r.T.Fatal(err)
	}
	got, err := r.Repo.GetPull(ctx, p.Number)
	if err != nil {
		r.T.Fatal(err)
	}
	return got.MergedSHA
}

// script makes the model's one session write proposals and files (path
// relative to the working directory → content).
func (r *rig) script(proposals string, files map[string]string) {
	r.T.Helper()
	var blocks []claudetest.Block
	for _, c := range r.probe {
		blocks = append(blocks, claudetest.Bash(c))
	}
	if proposals != "" {
		blocks = append(blocks, formulaagenttest.WriteEnvFile("DISINTO_GARDENER_PROPOSALS", proposals))
	}
	for p, c := range files {
		blocks = append(blocks, claudetest.Write("{{.Cwd}}/"+p, c))
	}
	r.Script(blocks...)
}

func hasLabel(i forge.Issue, l forge.LabelName) bool { return i.HasLabel(l) }
