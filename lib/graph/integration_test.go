package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// fixture is a project on the real forge with an ops repository.
type fixture struct {
	srv     *forgetest.Server
	project forgetest.Project
	ops     *ops.Repo
}

// newFixture creates the project and its ops repository holding files.
func newFixture(t *testing.T, files map[string]string) fixture {
	t.Helper()
	srv := gitea.Get(t)
	p := srv.NewProject(t, "graph")
	opsRepo := srv.NewRepo(t, p.Owner, "graph-ops")
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: srv.URL, Username: p.Owner.Login, Password: p.Owner.Password}})
	name, email := git.Identity(p.Owner.Login)
	r := ops.Open(ops.Options{Git: g, URL: srv.URL + "/" + opsRepo.Slug() + ".git",
		Dir: filepath.Join(t.TempDir(), "ops"), Name: name, Email: email})
	if _, err := r.Commit(t.Context(), "ops: graph inputs", func(ops.Files) ([]git.FileChange, error) {
		var out []git.FileChange
		for path, content := range files {
			out = append(out, git.FileChange{Path: path, Content: []byte(content)})
		}
		return out, nil
	}); err != nil {
		t.Fatal(err)
	}
	return fixture{srv: srv, project: p, ops: r}
}

// opsFiles returns the ops repository as the forge has it now.
func (f fixture) opsFiles(t *testing.T) graph.Files {
	t.Helper()
	if _, err := f.ops.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	files, head, err := f.ops.Local(t.Context())
	if err != nil || head == "" {
		t.Fatalf("ops checkout at %q: %v", head, err)
	}
	return graph.OpsFiles(files)
}

// issues creates issues in order (so #1 is the first) and closes those
// whose state is closed.
func (f fixture) issues(t *testing.T, is ...forge.Issue) {
	t.Helper()
	ctx := t.Context()
	for i, in := range is {
		got, err := f.project.Repo.CreateIssue(ctx, forge.NewIssue{Title: in.Title, Body: in.Body, Labels: in.Labels})
		if err != nil {
			t.Fatal(err)
		}
		if got.Number != int64(i+1) {
			t.Fatalf("issue %q is #%d, want #%d", in.Title, got.Number, i+1)
		}
		if in.State == forge.StateClosed {
			if err := f.project.Repo.CloseIssue(ctx, got.Number); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// viaProxy is the project's repository through a proxy that serves pages
// of two, so that every listing takes several pages.
func (f fixture) viaProxy(t *testing.T) (*forge.RepoClient, *forgetest.Proxy) {
	t.Helper()
	proxy := forgetest.NewProxy(t, f.srv.URL)
	proxy.CapPageSize(2)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: f.project.Owner.Token, User: f.project.Owner.Login, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c.Repo(f.project.Repo.Owner(), f.project.Repo.Name()), proxy
}

// TestForgeAndOpsScenarios is spec 40 §5.6 scenarios 1, 2, 3, 4 and 6
// against the real forge and a real ops repository: the tree at
// <ops>/prerequisites.md, issues over several pages with the closed ones,
// the labels of the forge.
func TestForgeAndOpsScenarios(t *testing.T) {
	tree := "# Prerequisite Tree\n\n## Objective: Launch (#3)\n- [x] Site live (#4)\n- [ ] Metrics wired\nStatus: BLOCKED — metrics\n\n" +
		"## Objective: Plan\n- [x] Planner runs daily (`formulas/run-planner.toml`)\nStatus: DONE\n"
	f := newFixture(t, map[string]string{"prerequisites.md": tree, "evidence/engagement/visits.json": `{"site-live-4": true}`})
	f.issues(t,
		forge.Issue{Title: "one", Body: "blocks #2", Labels: []forge.LabelName{forge.LabelBacklog}},
		forge.Issue{Title: "two", Body: "blocks #1"},
		forge.Issue{Title: "Launch"},
		forge.Issue{Title: "Site", State: forge.StateClosed},
		forge.Issue{Title: "Old work", Body: "Closed long ago.", State: forge.StateClosed},
	)
	repo, _ := f.viaProxy(t)
	b, err := graph.Build(t.Context(), graph.Options{Forge: repo, Ops: f.opsFiles(t), Agents: []string{"planner"},
		Formulas: map[string]string{"run-planner": "files issues labelled backlog"}})
	if err != nil {
		t.Fatal(err)
	}
	g := b.Graph
	if b.Sources.Forge != graph.SourceOK || b.Sources.Tree != "prerequisites.md" || b.Sources.Evidence != "evidence" {
		t.Fatalf("sources %+v", b.Sources)
	}
	// Scenario 1 and 6.
	if o, _ := g.Node("objective:launch"); o.Status != "BLOCKED" {
		t.Errorf("objective:launch %+v", o)
	}
	if p, _ := g.Node("prereq:site-live-4"); !p.Done {
		t.Errorf("prereq:site-live-4 %+v", p)
	}
	for _, e := range []graph.Edge{
		{From: "prereq:site-live-4", To: "objective:launch", Relation: graph.RelBlocks},
		{From: "prereq:metrics-wired", To: "objective:launch", Relation: graph.RelBlocks},
		{From: "issue:3", To: "objective:launch", Relation: graph.RelImplements},
		{From: "issue:4", To: "prereq:site-live-4", Relation: graph.RelImplements},
		{From: "evidence:engagement/visits", To: "prereq:site-live-4", Relation: graph.RelEvidences},
		{From: "issue:1", To: "label:backlog", Relation: graph.RelUsesLabel},
	} {
		if !g.Has(e.From, e.To, e.Relation) {
			t.Errorf("missing edge %+v", e)
		}
	}
	// Every issue, over three pages, closed ones included.
	if got := g.OfType(graph.TypeIssue); !slices.Equal(got, []string{"issue:1", "issue:2", "issue:3", "issue:4", "issue:5"}) {
		t.Errorf("issues %q", got)
	}
	if n, _ := g.Node("issue:5"); n.Status != string(forge.StateClosed) {
		t.Errorf("issue:5 %+v", n)
	}
	r := b.Report(graph.ReportOptions{Changed: []string{"formulas/run-planner.toml"}})
	// Scenario 2.
	if r.CyclesTotal != 1 || !slices.Equal(r.Cycles[0].Members, []string{"issue:1", "issue:2"}) {
		t.Errorf("cycles %+v", r.Cycles)
	}
	// Scenario 3: a forge label no issue uses and no formula names.
	stale := "label:" + string(forge.LabelCannotReproduce)
	if !slices.Contains(r.Orphans, graph.Orphan{ID: stale, Type: graph.TypeLabel, Reason: "no issue uses this label"}) {
		t.Errorf("%s not an orphan: %+v", stale, r.Orphans)
	}
	if slices.ContainsFunc(r.Orphans, func(o graph.Orphan) bool { return o.ID == "label:backlog" }) {
		t.Errorf("label:backlog is used: %+v", r.Orphans)
	}
	// Scenario 4.
	a := r.Affected
	if a == nil || len(a.Alerts) != 1 || a.Alerts[0].Prereq != "prereq:planner-runs-daily-formulasrun-plannertoml" ||
		!slices.Equal(a.Objectives, []string{"objective:plan"}) {
		t.Errorf("affected %+v", a)
	}
}

// TestForgeUnreachable is scenario 5: with the forge down the build
// succeeds with the local nodes only and says the forge was unavailable;
// an empty tracker is "ok".
func TestForgeUnreachable(t *testing.T) {
	f := newFixture(t, map[string]string{"prerequisites.md": "## Objective: Launch\n- [ ] Site live\nStatus: BLOCKED\n"})
	repo, proxy := f.viaProxy(t)
	opsFiles := f.opsFiles(t)
	empty, err := graph.Build(t.Context(), graph.Options{Forge: repo, Ops: opsFiles})
	if err != nil || empty.Sources.Forge != graph.SourceOK {
		t.Fatalf("empty tracker: %+v, %v", empty, err)
	}
	if err := proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	down, err := graph.Build(t.Context(), graph.Options{Forge: repo, Ops: opsFiles})
	if err != nil {
		t.Fatal(err)
	}
	if down.Sources.Forge != graph.SourceUnavailable || down.Sources.ForgeError == "" {
		t.Errorf("sources %+v", down.Sources)
	}
	if got := down.Graph.OfType(graph.TypeObjective); !slices.Equal(got, []string{"objective:launch"}) {
		t.Errorf("local nodes %q", got)
	}
	if n := len(down.Graph.OfType(graph.TypeLabel)); n != 0 {
		t.Errorf("%d labels without a forge", n)
	}
}

// TestRepoFiles reads VISION.md and AGENTS.md of the project repository
// through the forge's API.
func TestRepoFiles(t *testing.T) {
	f := newFixture(t, map[string]string{"prerequisites.md": ""})
	ctx := context.WithoutCancel(t.Context())
	if err := f.project.Repo.CreateFiles(ctx, "main", "docs", []forge.NewFile{
		{Path: "VISION.md", Content: []byte("# Vision\n## Reach\nAs #1 says.\n")},
		{Path: "agents/planner/AGENTS.md", Content: []byte("# Planner agent\n")},
	}); err != nil {
		t.Fatal(err)
	}
	f.issues(t, forge.Issue{Title: "one"})
	files := graph.RepoFiles(ctx, f.project.Repo, "")
	b, err := graph.Build(ctx, graph.Options{Forge: f.project.Repo, Project: files, Agents: []string{"planner"}})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Graph.Has("issue:1", "doc:VISION/reach", graph.RelReferences) || !b.Graph.Has("doc:agents/planner/AGENTS/planner-agent", "agent:planner", graph.RelDefines) {
		t.Errorf("edges %+v", b.Graph.Edges())
	}
	if len(b.Sources.Errors) != 0 {
		t.Errorf("errors %q", b.Sources.Errors)
	}
	list, err := files.List("agents/planner")
	if err != nil || !slices.Equal(list, []string{"agents/planner/AGENTS.md"}) {
		t.Errorf("list %q, %v", list, err)
	}
	if _, err := files.Read("nope.md"); err == nil {
		t.Error("read a missing file")
	}
}
