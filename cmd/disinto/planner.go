package main

import (
	"context"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/planner"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
)

// newPlannerAgent builds the planner of one project, acting as
// planner-bot (FORGE_PLANNER_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its own checkout of the ops
// repository under <data>/clones/<project>/<bot>-ops (the tree and the
// memory are committed as the planner, procurement requests proposed as
// it), its state (lock, watermark, run counter) under
// <data>/state/<project>/planner, the planner formula, the structural
// graph built from its ops checkout and the shared model runner. Without
// an ops repository in the project file the planner keeps no tree and
// says so in each run.
func newPlannerAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(planner.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	b := rp.Bot
	runner := d.FormulaRunner(rp)
	o := planner.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Runner: runner, Redactor: s.Redactor, Log: d.Log,
	}
	if owner, name, ok := strings.Cut(p.OpsRepo, "/"); ok {
		user, email := git.Identity(b.User)
		o.Ops = s.Checkouts.Open(ops.Options{Git: d.GitAs(b), URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
			Dir: s.Layout.Ops(p.Name, b.User), Name: user, Email: email, Log: d.Log})
		o.OpsForge = rp.Forge.Client().Repo(owner, name)
		o.Graph = plannerGraph{ops: o.Ops, repo: rp.Forge, log: d.Log}
	} else {
		d.Log.Info().Str("project", p.Name).Msg("planner: no ops repository; the tree and the memory are not kept")
	}
	return planner.New(o), nil
}

// plannerGraph is the planner's view of the structural graph: the report
// of p's graph, built like the review's, from the planner's own ops
// checkout as its run just fetched it.
type plannerGraph struct {
	ops  *ops.Repo
	repo *forge.RepoClient
	log  zerolog.Logger
}

// Context implements formulaagent.Graph.
func (g plannerGraph) Context(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
	defer cancel()
	files, head, err := g.ops.Local(ctx)
	if err != nil || head == "" {
		return "", err
	}
	b, err := buildReviewGraph(ctx, g.repo, graph.OpsFiles(files), g.log)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := b.Report(graph.ReportOptions{Bottlenecks: true}).WriteText(&out); err != nil {
		return "", err
	}
	return out.String(), nil
}
