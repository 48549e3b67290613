package main

import (
	"path/filepath"

	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// architectHoldings are the open sprints of p's architect with their
// stages, read from the data dir for a status taken while no daemon runs
// (a running daemon's architect reports them live).
func architectHoldings(dataDir string, p *config.Project) []agent.Item {
	return architect.LastReport(filepath.Join(dataDir, "state", p.Name, "architect"), p.Name).Items
}
