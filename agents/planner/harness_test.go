package planner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent/formulaagenttest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea (formulaagenttest.Rig) with its
// ops repository: an owner (who plays humans and the predictor), a
// planner bot collaborator on both, and a planner acting as the bot,
// with its own ops checkout, the real structural graph, and the real
// claude CLI against a scripted model server.
type rig struct {
	*formulaagenttest.Rig
	a *Agent
	// opsRepo is the ops repository as the owner.
	opsRepo *forge.RepoClient
	opsDir  string
}

func ctxOf(t testing.TB) context.Context { return formulaagenttest.Ctx(t) }

// newRig makes the project with files on main and the ops repository
// with opsFiles on its main.
func newRig(t testing.TB, files, opsFiles map[string]string) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	all := map[string]string{"VISION.md": "# Vision\n\n## Launch\n\nThe site is live and measured.\n"}
	for p, c := range files {
		all[p] = c
	}
	r := &rig{Rig: formulaagenttest.New(t, gitea.Get(t), formulaagenttest.Options{Role: role, Files: all})}
	ctx := ctxOf(t)
	r.opsRepo = r.Srv.NewRepo(t, r.Owner, "proj-ops")
	if err := r.opsRepo.AddCollaborator(ctx, r.Bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if len(opsFiles) > 0 {
		var nf []forge.NewFile
		for p, c := range opsFiles {
			nf = append(nf, forge.NewFile{Path: p, Content: []byte(c)})
		}
		if err := r.opsRepo.CreateFiles(ctx, "main", "ops seed", nf); err != nil {
			t.Fatal(err)
		}
	}
	r.opsDir = filepath.Join(r.Data, "ops")
	r.build()
	return r
}

// build (re)makes the agent over the same data dir, as a restarted
// daemon would.
func (r *rig) build() {
	r.T.Helper()
	f, err := formula.Load(formulas.FS, FormulaName)
	if err != nil {
		r.T.Fatal(err)
	}
	name, email := git.Identity(r.Bot.Login)
	o := ops.Open(ops.Options{Git: r.Git(), URL: r.GitURL() + "/" + r.opsRepo.Slug() + ".git", Dir: r.opsDir,
		Name: name, Email: email, Log: r.Log})
	opsForge := r.BotClient(r.Proxy.URL).Repo(r.opsRepo.Owner(), r.opsRepo.Name())
	r.a = New(Options{Project: r.Project.Name, Primary: "main", Forge: r.BotRepo, Driver: r.FormulaRunner(f),
		Ops: o, OpsForge: opsForge, Graph: rigGraph{r: r, ops: o}, Log: r.Log})
}

// rigGraph is the structural graph as the daemon builds it: the ops
// checkout as last fetched and the tracker.
type rigGraph struct {
	r   *rig
	ops *ops.Repo
}

// Context implements Graph.
func (g rigGraph) Context(ctx context.Context) (string, error) {
	files, head, err := g.ops.Local(ctx)
	if err != nil || head == "" {
		return "", err
	}
	b, err := graph.Build(ctx, graph.Options{Forge: g.r.Repo, Ops: graph.OpsFiles(files), Agents: []string{"planner", "predictor"}})
	if err != nil {
		return "", err
	}
	var out strings.Builder
	err = b.Report(graph.ReportOptions{Bottlenecks: true}).WriteText(&out)
	return out.String(), err
}

// mustTick runs one pass as the daemon's runtime does, failing on an error.
func (r *rig) mustTick() { r.T.Helper(); r.MustTick(r.a, config.RolePlanner) }

// script makes the model's session write the plan.
func (r *rig) script(p Plan) {
	r.T.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		r.T.Fatal(err)
	}
	r.scriptRaw(string(data))
}

func (r *rig) scriptRaw(out string) {
	r.T.Helper()
	r.Script(formulaagenttest.WriteEnvFile(EnvPlan, out))
}

// opsFile reads a file of the ops repository's ref ("" for main); ok is
// false when there is none.
func (r *rig) opsFile(path, ref string) (string, bool) {
	r.T.Helper()
	f, err := r.opsRepo.GetFile(ctxOf(r.T), path, ref)
	if err != nil {
		return "", false
	}
	return string(f.Content), true
}

// opsHead is the ops repository's main head.
func (r *rig) opsHead() string {
	r.T.Helper()
	b, err := r.opsRepo.GetBranch(ctxOf(r.T), "main")
	if err != nil {
		r.T.Fatal(err)
	}
	return b.SHA
}

// opsPulls are the ops repository's pull requests, any state.
func (r *rig) opsPulls() []forge.PullRequest {
	r.T.Helper()
	ps, err := r.opsRepo.ListPulls(ctxOf(r.T), forge.StateAll)
	if err != nil {
		r.T.Fatal(err)
	}
	return ps
}

// opsLog is the subject and body of the newest commit of the planner's
// ops checkout.
func (r *rig) opsLog() string {
	r.T.Helper()
	out, err := exec.Command("git", "-C", r.opsDir, "log", "-1", "--format=%an%n%B", "refs/remotes/origin/main").CombinedOutput()
	if err != nil {
		r.T.Fatalf("git log: %v: %s", err, out)
	}
	return string(out)
}

// openByBot are the open issues the planner bot filed.
func (r *rig) openByBot() []forge.Issue {
	var out []forge.Issue
	for _, i := range r.ByBot() {
		if i.State == forge.StateOpen {
			out = append(out, i)
		}
	}
	return out
}

// backlog is a valid backlog proposal.
func backlog(ref, title string) Proposal {
	return Proposal{Ref: ref, Kind: Backlog, Template: "feature", Title: title, Problem: "Nothing measures " + title + ".",
		Solution: "Add it.", AffectedFiles: []string{"cmd/metrics.go"}, Acceptance: []string{"it is measured"},
		Objectives: []string{"Launch"}}
}

// launchTree is a tree with the objective Launch.
func launchTree(prereqs ...Prereq) *Tree {
	return &Tree{Objectives: []Objective{{Name: "Launch", Issue: 0, Status: "BLOCKED", Reason: "metrics", Prerequisites: prereqs}}}
}

// hasAll reports whether s contains every part.
func hasAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
