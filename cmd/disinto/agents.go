package main

import (
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// agentDeps is what an agent constructor gets for one (project, role).
type agentDeps struct {
	Config  *config.Config
	Project *config.Project
	Role    config.Role
	// DataDir is the daemon's data dir; per-issue state goes under
	// StateDir (<data>/state/<project>).
	DataDir  string
	StateDir string
	Log      zerolog.Logger
}

// agentFactory builds the Agent of one role for one project.
type agentFactory func(d agentDeps) (agent.Agent, error)

// agentRegistry maps each implemented role to its constructor. Each agent
// package adds its one line here; a configured role without an entry is
// logged at start-up and not scheduled.
func agentRegistry() map[config.Role]agentFactory {
	return map[config.Role]agentFactory{
		config.RoleDev: func(d agentDeps) (agent.Agent, error) {
			return dev.FromConfig(dev.Deps{Config: d.Config, Project: d.Project, DataDir: d.DataDir, Log: d.Log})
		},
		config.RoleReview: func(d agentDeps) (agent.Agent, error) {
			return review.FromConfig(review.Deps{Config: d.Config, Project: d.Project, DataDir: d.DataDir, Log: d.Log})
		},
	}
}
