package main

import (
	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
)

// architectHoldings are the open sprints of p's architect with their
// stages, read from the data dir for a status taken while no daemon runs
// (a running daemon's architect reports them live).
func architectHoldings(dataDir string, p *config.Project) []agent.Item {
	return architect.LastReport(datadir.New(dataDir).RoleState(p.Name, config.RoleArchitect), p.Name).Items
}
