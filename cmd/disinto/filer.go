package main

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/agents/filer"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
)

// The sprint filer (agents/filer) is a role entry of its own, not part of
// the architect's tick: it acts as filer-bot, which may write the project's
// issues and only read the ops repository, while the architect writes the
// ops repository and only reads the project. It runs on the architect's
// cadence (its interval or cron schedule; 6 h by default), at every start,
// and within seconds of any event of the ops repository, such as a sprint
// pull request being merged.

// newFilerAgent builds the filer of one project, acting as filer-bot
// (FORGE_FILER_TOKEN). Its row of the role table has no fallback to the
// dev bot (W-FI-2): the filer's identity is what keeps its writes to the
// project's issues.
func newFilerAgent(d daemon.Deps) (agent.Agent, error) {
	p := d.Project
	b, err := d.Config.Bot(config.RoleFiler)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", filer.ErrNoIdentity, err)
	case p.OpsRepo == "":
		return nil, fmt.Errorf("project %s (%s): the filer needs an ops repository (ops_repo)", p.Name, p.File)
	}
	fc, err := d.Services.ForgeAs(p, b, d.Log)
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(p.OpsRepo, "/")
	return filer.New(filer.Options{Project: p.Name, Repo: p.Repo, Bot: b.User, Forge: fc, Ops: fc.Client().Repo(owner, name), Log: d.Log})
}
