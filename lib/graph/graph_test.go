package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/graph"
)

// launchTree is the tree of spec 40 §5.6 scenario 1.
const launchTree = "# Prerequisite Tree\n<!-- Last updated: 2026-01-01 -->\n\n" +
	"## Objective: Launch (#10)\n- [x] Site live (#11)\n- [ ] Metrics wired\nStatus: BLOCKED — metrics\n"

func build(t *testing.T, o graph.Options) *graph.Built {
	t.Helper()
	b, err := graph.Build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func issue(n int64, title, body string, state forge.State, labels ...string) forge.Issue {
	is := forge.Issue{Number: n, Title: title, Body: body, State: state}
	for _, l := range labels {
		is.Labels = append(is.Labels, forge.LabelName(l))
	}
	return is
}

// TestTreeNodesAndEdges is scenario 1.
func TestTreeNodesAndEdges(t *testing.T) {
	f := &fakeForge{issues: []forge.Issue{issue(10, "Launch", "", forge.StateOpen), issue(11, "Site", "", forge.StateClosed)}}
	b := build(t, graph.Options{Ops: memFiles{"prerequisites.md": launchTree}, Forge: f})
	g := b.Graph
	obj, ok := g.Node("objective:launch")
	if !ok || obj.Type != graph.TypeObjective || obj.Status != "BLOCKED" {
		t.Fatalf("objective:launch = %+v, %v", obj, ok)
	}
	site, ok := g.Node("prereq:site-live-11")
	if !ok || !site.Done || site.Type != graph.TypePrereq {
		t.Errorf("prereq:site-live-11 = %+v, %v", site, ok)
	}
	if m, ok := g.Node("prereq:metrics-wired"); !ok || m.Done {
		t.Errorf("prereq:metrics-wired = %+v, %v", m, ok)
	}
	for _, e := range []graph.Edge{
		{From: "prereq:site-live-11", To: "objective:launch", Relation: graph.RelBlocks},
		{From: "prereq:metrics-wired", To: "objective:launch", Relation: graph.RelBlocks},
		{From: "issue:10", To: "objective:launch", Relation: graph.RelImplements},
		{From: "issue:11", To: "prereq:site-live-11", Relation: graph.RelImplements},
	} {
		if !g.Has(e.From, e.To, e.Relation) {
			t.Errorf("missing edge %+v; edges %+v", e, g.Edges())
		}
	}
	if b.Sources.Tree != "prerequisites.md" || b.Sources.Forge != graph.SourceOK {
		t.Errorf("sources %+v", b.Sources)
	}
	if len(f.queries) != 1 || f.queries[0].State != forge.StateAll {
		t.Errorf("issue queries %+v, want one for every state (closed included)", f.queries)
	}
}

// TestParseTree covers the parser contract's edges: no issue suffix, a
// second status line, prerequisites before any objective.
func TestParseTree(t *testing.T) {
	tree := "- [ ] stray\n## Objective: Grow users\n- [X] Signup works (#3, #4)\n  - [ ] Nested #5\nStatus: READY\nStatus: DONE\n" +
		"## Objective:   Spaced  (#7)  \n"
	obs := graph.ParseTree(tree)
	if len(obs) != 2 {
		t.Fatalf("objectives %+v", obs)
	}
	g := obs[0]
	if g.Name != "Grow users" || g.Issue != 0 || g.Status != "READY" || len(g.Prereqs) != 2 {
		t.Errorf("first objective %+v", g)
	}
	if p := g.Prereqs[0]; !p.Done || !slices.Equal(p.Issues, []int64{3, 4}) || p.ID() != "prereq:signup-works-3-4" {
		t.Errorf("prereq %+v (%s)", p, p.ID())
	}
	if obs[1].Name != "Spaced" || obs[1].Issue != 7 {
		t.Errorf("second objective %+v", obs[1])
	}
}

// TestBlocksCycle is scenario 2, and the dependency forms deps parses.
func TestBlocksCycle(t *testing.T) {
	f := &fakeForge{issues: []forge.Issue{
		issue(1, "one", "blocks #2", forge.StateOpen),
		issue(2, "two", "This blocks #1.", forge.StateOpen),
		issue(3, "three", "## Depends on\n- #4\n", forge.StateOpen),
		issue(4, "four", "Blocked by #3.", forge.StateOpen),
		issue(5, "five", "depends on #1", forge.StateOpen),
	}}
	r := build(t, graph.Options{Forge: f}).Report(graph.ReportOptions{})
	if r.CyclesTotal != 2 || len(r.Cycles) != 2 {
		t.Fatalf("cycles %+v", r.Cycles)
	}
	c := r.Cycles[0]
	if !slices.Equal(c.Members, []string{"issue:1", "issue:2"}) || c.Relation != graph.RelBlocks ||
		!slices.Equal(c.Chain, []string{"issue:1", "issue:2", "issue:1"}) {
		t.Errorf("first cycle %+v", c)
	}
	if !slices.Equal(r.Cycles[1].Members, []string{"issue:3", "issue:4"}) {
		t.Errorf("second cycle %+v", r.Cycles[1])
	}
}

// TestCyclesCapped: the report lists at most MaxCycles and counts them all.
func TestCyclesCapped(t *testing.T) {
	var issues []forge.Issue
	for i := int64(1); i <= 20; i += 2 {
		issues = append(issues, issue(i, "a", fmt.Sprintf("blocks #%d", i+1), forge.StateOpen),
			issue(i+1, "b", fmt.Sprintf("blocks #%d", i), forge.StateOpen))
	}
	r := build(t, graph.Options{Forge: &fakeForge{issues: issues}}).Report(graph.ReportOptions{MaxCycles: 3})
	if r.CyclesTotal != 10 || len(r.Cycles) != 3 {
		t.Errorf("%d cycles listed of %d", len(r.Cycles), r.CyclesTotal)
	}
}

// TestOrphanLabel is scenario 3.
func TestOrphanLabel(t *testing.T) {
	f := &fakeForge{labels: []string{"stale-label", "backlog"},
		issues: []forge.Issue{issue(1, "x", "", forge.StateOpen, "backlog")}}
	b := build(t, graph.Options{Forge: f, Formulas: map[string]string{"dev": "labels: backlog, in-progress"}, Agents: []string{"dev"}})
	r := b.Report(graph.ReportOptions{})
	var got []string
	for _, o := range r.Orphans {
		got = append(got, o.ID+": "+o.Reason)
	}
	if !slices.Contains(got, "label:stale-label: no issue uses this label") {
		t.Errorf("orphans %q", got)
	}
	if slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "label:backlog") || strings.HasPrefix(s, "formula:dev")
	}) {
		t.Errorf("linked nodes reported as orphans: %q", got)
	}
	if !b.Graph.Has("agent:dev", "formula:dev", graph.RelExecutes) || !b.Graph.Has("formula:dev", "label:in-progress", graph.RelProduces) {
		t.Errorf("agent and formula edges missing: %+v", b.Graph.Edges())
	}
}

// plannerTree has a DONE prerequisite that relies on the planner's formula.
const plannerTree = "## Objective: Plan (#20)\n- [x] Planner runs daily (`formulas/run-planner.toml`)\n- [ ] Predictor files theories\nStatus: DONE\n" +
	"## Objective: Ship\n- [ ] Compose stack up (`docker-compose.yml`)\nStatus: BLOCKED\n"

// TestChangedFilesAlert is scenario 4: a change to the planner's formula
// reaches the DONE prerequisite that names it, and its objective only.
func TestChangedFilesAlert(t *testing.T) {
	b := build(t, graph.Options{Ops: memFiles{"prerequisites.md": plannerTree}, Agents: []string{"planner", "predictor"},
		Formulas: map[string]string{"run-planner": "", "run-predictor": ""}})
	a := b.Affected([]string{"formulas/run-planner.toml"}, 0)
	if !slices.Equal(a.Objectives, []string{"objective:plan"}) {
		t.Errorf("affected objectives %q", a.Objectives)
	}
	if !slices.Equal(a.Prerequisites, []string{"prereq:planner-runs-daily-formulasrun-plannertoml"}) {
		t.Errorf("affected prerequisites %q", a.Prerequisites)
	}
	if len(a.Alerts) != 1 || a.Alerts[0].Alert != graph.AlertDone || a.Alerts[0].Prereq != a.Prerequisites[0] {
		t.Errorf("alerts %+v", a.Alerts)
	}
	// The agent's code runs the formula, so it reaches the same objective.
	if got := b.Affected([]string{"agents/planner/agent.go"}, 0).Objectives; !slices.Equal(got, []string{"objective:plan"}) {
		t.Errorf("agent change affects %q", got)
	}
	// Infrastructure maps to its node, and from there to what names it.
	if got := b.Affected([]string{"docker/agents/Dockerfile"}, 0); len(got.Objectives) != 0 {
		t.Errorf("a Dockerfile affects %q; only compose is named", got.Objectives)
	}
	if got := b.Affected([]string{"docker-compose.yml"}, 0).Objectives; !slices.Equal(got, []string{"objective:ship"}) {
		t.Errorf("compose affects %q", got)
	}
	// A depth of one reaches the prerequisite but not its objective.
	if got := b.Affected([]string{"formulas/run-planner.toml"}, 1); len(got.Objectives) != 0 || len(got.Prerequisites) != 1 {
		t.Errorf("depth 1 reaches %+v", got)
	}
}

// TestForgeUnavailable is scenario 5: the local nodes only, and the
// report says the forge could not be read, unlike an empty tracker.
func TestForgeUnavailable(t *testing.T) {
	ops := memFiles{"prerequisites.md": launchTree}
	down := build(t, graph.Options{Ops: ops, Forge: &fakeForge{err: fmt.Errorf("list issues: %w", forge.ErrUnavailable)}})
	empty := build(t, graph.Options{Ops: ops, Forge: &fakeForge{}})
	if down.Sources.Forge != graph.SourceUnavailable || !strings.Contains(down.Sources.ForgeError, "unavailable") {
		t.Errorf("down: sources %+v", down.Sources)
	}
	if empty.Sources.Forge != graph.SourceOK || empty.Sources.ForgeError != "" {
		t.Errorf("empty: sources %+v", empty.Sources)
	}
	if len(down.Graph.OfType(graph.TypeObjective)) != 1 || len(down.Graph.OfType(graph.TypeIssue)) != 0 {
		t.Errorf("down: nodes %+v", down.Graph.Nodes())
	}
	if none := build(t, graph.Options{Ops: ops}); none.Sources.Forge != graph.SourceUnavailable {
		t.Errorf("no forge: sources %+v", none.Sources)
	}
}

// TestTreeLocation is scenario 6 and the configured location: the tree
// is read from the ops repository's prerequisites.md, or from where the
// options say; a missing tree is said.
func TestTreeLocation(t *testing.T) {
	if b := build(t, graph.Options{Ops: memFiles{"planner/prerequisite-tree.md": launchTree}}); b.Sources.Tree != graph.SourceMissing ||
		len(b.Graph.OfType(graph.TypeObjective)) != 0 {
		t.Errorf("the reference's project path was read by default: %+v", b.Sources)
	}
	b := build(t, graph.Options{Ops: memFiles{"plans/tree.md": launchTree}, TreePath: "plans/tree.md"})
	if b.Sources.Tree != "plans/tree.md" || !slices.Equal(b.Graph.OfType(graph.TypeObjective), []string{"objective:launch"}) {
		t.Errorf("configured tree: %+v %q", b.Sources, b.Graph.OfType(graph.TypeObjective))
	}
}

// TestEvidence: evidence files under the evidence directory and its
// categories back the prerequisites whose slug they name.
func TestEvidence(t *testing.T) {
	ops := memFiles{"prerequisites.md": launchTree,
		"evidence/engagement/2026-01.json": `{"note": "Site-Live-11 checked"}`,
		"evidence/top.json":                `{"about": "metrics-wired"}`,
		"evidence/red-team/other.json":     `{}`,
		"evidence/readme.md":               "not evidence"}
	b := build(t, graph.Options{Ops: ops})
	g := b.Graph
	if !g.Has("evidence:engagement/2026-01", "prereq:site-live-11", graph.RelEvidences) || !g.Has("evidence:top", "prereq:metrics-wired", graph.RelEvidences) {
		t.Errorf("evidence edges: %+v", g.Edges())
	}
	if n, _ := g.Node("evidence:engagement/2026-01"); n.Category != "engagement" {
		t.Errorf("category %+v", n)
	}
	r := b.Report(graph.ReportOptions{})
	if !slices.Contains(r.Orphans, graph.Orphan{ID: "evidence:red-team/other", Type: graph.TypeEvidence, Reason: "not linked to any prerequisite"}) {
		t.Errorf("orphans %+v", r.Orphans)
	}
	if b.Sources.Evidence != "evidence" {
		t.Errorf("sources %+v", b.Sources)
	}
	// Both evidence files lead to the objective: it is not thin on evidence.
	if len(r.ThinObjectives) != 0 {
		t.Errorf("thin %+v", r.ThinObjectives)
	}
}

// TestMappingFile: the ops repository's mapping file maps files to nodes;
// a malformed one is said by name and the defaults still apply.
func TestMappingFile(t *testing.T) {
	ops := memFiles{"prerequisites.md": launchTree,
		"graph/files.toml": "[[map]]\nfiles = [\"site/**\"]\nnodes = [\"prereq:site-live-11\"]\n"}
	b := build(t, graph.Options{Ops: ops})
	a := b.Affected([]string{"site/index.html"}, 0)
	if !slices.Equal(a.Objectives, []string{"objective:launch"}) || len(a.Alerts) != 1 {
		t.Errorf("affected %+v", a)
	}
	if b.Sources.Mappings != "graph/files.toml" {
		t.Errorf("sources %+v", b.Sources)
	}
	ops["graph/files.toml"] = "[[map]]\nfiles = [\"x\"]\nnodez = [\"a:b\"]\n"
	bad := build(t, graph.Options{Ops: ops})
	if bad.Sources.Mappings != graph.SourceMissing || len(bad.Sources.Errors) != 1 || !strings.Contains(bad.Sources.Errors[0], "graph/files.toml") {
		t.Errorf("bad mapping: %+v", bad.Sources)
	}
	if got := graph.NewMapper(nil, nil).Nodes(".woodpecker/ci.yml"); !slices.Contains(got, "infrastructure:ci") {
		t.Errorf("CI file maps to %q", got)
	}
}

// TestIssueEdges: labels, references, vision sections and objectives
// named in an issue.
func TestIssueEdges(t *testing.T) {
	project := memFiles{"VISION.md": "# Vision\n## Growth\nSee #7.\n", "AGENTS.md": "# Agents\n## The dev agent\nx\n## Development notes\n"}
	f := &fakeForge{issues: []forge.Issue{
		issue(7, "Launch the site", "Relates to #8 and repo#9.", forge.StateClosed, "backlog"),
		issue(8, "eight", "", forge.StateOpen),
	}}
	g := build(t, graph.Options{Ops: memFiles{"prerequisites.md": launchTree}, Project: project, Forge: f, Agents: []string{"dev"}}).Graph
	for _, e := range []graph.Edge{
		{From: "issue:7", To: "label:backlog", Relation: graph.RelUsesLabel},
		{From: "issue:7", To: "issue:8", Relation: graph.RelReferences},
		{From: "issue:7", To: "doc:VISION/growth", Relation: graph.RelReferences},
		{From: "issue:7", To: "objective:launch", Relation: graph.RelImplements},
		{From: "doc:AGENTS/the-dev-agent", To: "agent:dev", Relation: graph.RelDefines},
	} {
		if !g.Has(e.From, e.To, e.Relation) {
			t.Errorf("missing %+v", e)
		}
	}
	if g.Has("issue:7", "issue:9", graph.RelReferences) || g.Has("doc:AGENTS/development-notes", "agent:dev", graph.RelDefines) {
		t.Errorf("spurious edges: %+v", g.Edges())
	}
}

// TestReportJSONAndText: every list is [] not null, and the text names
// the sources and the cycles.
func TestReportJSONAndText(t *testing.T) {
	b := build(t, graph.Options{})
	r := b.Report(graph.ReportOptions{Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Bottlenecks: true})
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("null")) {
		t.Errorf("null in %s", raw)
	}
	if !bytes.Contains(raw, []byte(`"generated":"2026-01-02T03:04:05Z"`)) || bytes.Contains(raw, []byte(`"affected"`)) {
		t.Errorf("json %s", raw)
	}
	f := &fakeForge{issues: []forge.Issue{issue(1, "one", "blocks #2", forge.StateOpen), issue(2, "two", "blocks #1", forge.StateOpen)}}
	r = build(t, graph.Options{Forge: f}).Report(graph.ReportOptions{Changed: []string{"Makefile"}})
	var out strings.Builder
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"forge ok", "tree missing", "issue:1 → issue:2 → issue:1", "Changed files: Makefile", "affected objectives: none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBottlenecks: the middle of a chain carries the shortest paths.
func TestBottlenecks(t *testing.T) {
	g := graph.New()
	for _, e := range [][2]string{{"a", "m"}, {"b", "m"}, {"m", "x"}, {"m", "y"}} {
		g.Link(e[0], e[1], graph.RelBlocks)
	}
	bs := g.Bottlenecks()
	if len(bs) != 1 || bs[0].ID != "m" || bs[0].Dependents != 2 || bs[0].Centrality != 0.3333 { // 4 of 12 ordered pairs
		t.Errorf("bottlenecks %+v", bs)
	}
}

// TestReach: depth and relations bound the walk, and ReachBack walks the
// other way.
func TestReach(t *testing.T) {
	g := graph.New()
	g.Link("a", "b", graph.RelBlocks)
	g.Link("b", "c", graph.RelBlocks)
	g.Link("c", "d", graph.RelReferences)
	if got := g.Reach([]string{"a"}, 0, graph.RelBlocks); len(got) != 3 || got["c"] != 2 {
		t.Errorf("reach %v", got)
	}
	if got := g.Reach([]string{"a"}, 1); len(got) != 2 {
		t.Errorf("depth 1 %v", got)
	}
	if got := g.ReachBack([]string{"d"}, 0); len(got) != 4 || got["a"] != 3 {
		t.Errorf("back %v", got)
	}
	if got := g.Reach([]string{"nowhere"}, 0); len(got) != 0 {
		t.Errorf("unknown start %v", got)
	}
}

// TestAffectedText: what the review prompt gets, and nothing when the
// change reaches no objective.
func TestAffectedText(t *testing.T) {
	b := build(t, graph.Options{Ops: memFiles{"prerequisites.md": plannerTree}, Agents: []string{"planner"}, Formulas: map[string]string{"run-planner": ""}})
	got := b.Affected([]string{"formulas/run-planner.toml"}, 0).Text()
	want := "Affected objectives: objective:plan\nAffected prerequisites: prereq:planner-runs-daily-formulasrun-plannertoml\n" +
		"Alert: prereq:planner-runs-daily-formulasrun-plannertoml (Planner runs daily (`formulas/run-planner.toml`)): " + graph.AlertDone + "\n"
	if got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if got := b.Affected([]string{"README.md"}, 0).Text(); got != "" {
		t.Errorf("unrelated change: %q", got)
	}
}
