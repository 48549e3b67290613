package main

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
)

// graphReviewTimeout bounds the graph built for one review prompt.
const graphReviewTimeout = time.Minute

// graphReviewTTL is how long a graph built for reviews is reused while
// the ops checkout has not moved: reviews of several pull requests in one
// tick list the issues once.
const graphReviewTTL = 5 * time.Minute

// graphObjectives returns, for the review prompt, what p's structural
// graph says a change to files affects: the graph is built from the
// daemon's ops checkout as last fetched and the tracker as repo reads
// it. "" without an ops checkout, or when the change reaches nothing.
func graphObjectives(opsOf func(project string) *ops.Repo, p *config.Project, repo *forge.RepoClient, log zerolog.Logger) func(context.Context, []string) string {
	var (
		mu    sync.Mutex
		built *graph.Built
		head  string
		at    time.Time
	)
	return func(ctx context.Context, files []string) string {
		r := opsOf(p.Name)
		if r == nil || len(files) == 0 {
			return ""
		}
		ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
		defer cancel()
		opsFiles, now, err := r.Local(ctx)
		if err != nil || now == "" {
			return ""
		}
		mu.Lock()
		defer mu.Unlock()
		if built == nil || head != now || time.Since(at) > graphReviewTTL {
			b, err := buildReviewGraph(ctx, repo, graph.OpsFiles(opsFiles), log)
			if err != nil {
				return ""
			}
			built, head, at = b, now, time.Now()
		}
		return built.Affected(files, 0).Text()
	}
}

// buildReviewGraph builds the graph a review needs: the tree, evidence
// and mappings of the ops repository, the tracker, the agents and the
// formulas (the project's documents add no edge a change travels along).
func buildReviewGraph(ctx context.Context, repo *forge.RepoClient, opsFiles graph.Files, log zerolog.Logger) (*graph.Built, error) {
	fms, err := embeddedFormulas()
	if err != nil {
		return nil, err
	}
	return graph.Build(ctx, graph.Options{Forge: repo, Ops: opsFiles, Agents: roleNames(), Formulas: fms, Log: log})
}

// roleNames is the agent registry of the graph: every role.
func roleNames() []string {
	out := make([]string, 0, len(config.AllRoles()))
	for _, r := range config.AllRoles() {
		out = append(out, string(r))
	}
	return out
}

// predictorGraph is the predictor's view of the structural graph: the
// report of p's graph (orphans, cycles, thin objectives, bottlenecks) as
// text, built like the review's from the daemon's ops checkout as last
// fetched. "" without an ops checkout.
type predictorGraph struct {
	opsOf func(project string) *ops.Repo
	p     *config.Project
	repo  *forge.RepoClient
	log   zerolog.Logger
}

// Context implements predictor.Graph.
func (g predictorGraph) Context(ctx context.Context) (string, error) {
	r := g.opsOf(g.p.Name)
	if r == nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
	defer cancel()
	opsFiles, head, err := r.Local(ctx)
	if err != nil || head == "" {
		return "", err
	}
	b, err := buildReviewGraph(ctx, g.repo, graph.OpsFiles(opsFiles), g.log)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := b.Report(graph.ReportOptions{Bottlenecks: true}).WriteText(&out); err != nil {
		return "", err
	}
	return out.String(), nil
}
