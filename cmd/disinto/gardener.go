package main

import (
	"github.com/disinto/disinto/agents/gardener"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
)

// newGardenerAgent builds the gardener of one project, acting as
// gardener-bot (FORGE_GARDENER_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its state (lock, watermark, dust,
// applied manifests) under <data>/state/<project>/gardener, the gardener
// formula and the shared model runner. Its pushes authenticate as the
// same bot through lib/git's credential helper.
func newGardenerAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(gardener.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	reviewBot := ""
	if rb, err := d.Config.Bot(config.RoleReview); err == nil {
		reviewBot = rb.User
	}
	runner := d.FormulaRunner(rp)
	return gardener.New(gardener.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Runner: runner,
		ReviewBot: reviewBot, Redactor: s.Redactor, Log: d.Log,
	}), nil
}

// choreRoles are the roles whose chore/<role>-* pull requests the dev bot
// merges once approved and green.
var choreRoles = []config.Role{config.RoleGardener}

// choreBots maps each chore role to its bot's login (the dev bot's when
// the role has no token of its own).
func choreBots(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, r := range choreRoles {
		if b, err := cfg.Bot(r); err == nil {
			out[string(r)] = b.User
		}
	}
	return out
}
