package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/graph"
)

// graphReviewTimeout bounds the graph built for one review prompt.
const graphReviewTimeout = time.Minute

// graphObjectives returns, for the review prompt, what p's structural
// graph says a change to files affects: the graph is built from the
// daemon's ops checkout as last fetched and the tracker as repo reads
// it. "" without an ops checkout, or when the change reaches nothing.
func (s *services) graphObjectives(p *config.Project, repo *forge.RepoClient, log zerolog.Logger) func(context.Context, []string) string {
	return func(ctx context.Context, files []string) string {
		s.mem.mu.Lock()
		oc := s.mem.ops
		s.mem.mu.Unlock()
		if oc == nil || len(files) == 0 {
			return ""
		}
		r := oc.repo(p.Name)
		if r == nil {
			return ""
		}
		ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
		defer cancel()
		opsFiles, head, err := r.Local(ctx)
		if err != nil || head == "" {
			return ""
		}
		agents := make([]string, 0, len(config.AllRoles))
		for _, role := range config.AllRoles {
			agents = append(agents, string(role))
		}
		fms, err := embeddedFormulas()
		if err != nil {
			return ""
		}
		built, err := graph.Build(ctx, graph.Options{Forge: repo, Ops: graph.OpsFiles(opsFiles),
			Project: graph.RepoFiles(ctx, repo, p.PrimaryBranch), Agents: agents, Formulas: fms, Log: log})
		if err != nil {
			return ""
		}
		return built.Affected(files, 0).Text()
	}
}
