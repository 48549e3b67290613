package main

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// newArchitectAgent builds the architect of one project, acting as
// architect-bot (FORGE_ARCHITECT_TOKEN; its row of the role table has no
// fallback to the dev bot, which writes the project repository, as the
// architect must not), which reads the project repository and writes the
// ops repository: clients of both, an
// ops checkout of its own under <data>/clones/<project>/<bot>-ops for
// opening sprint pull requests, its state (lock, watermark, record)
// under <data>/state/<project>/architect, one conversation per sprint
// under <data>/state/<project>/sessions, the architect formula and the
// shared model runner. Decisions count from the project's maintainers
// (the project file, FORGE_ADMIN_USERS, else the repository's owners),
// never from the factory's bots.
func newArchitectAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(architect.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	b := rp.Bot
	owner, name, ok := strings.Cut(p.OpsRepo, "/")
	if !ok || owner == "" || name == "" {
		return nil, fmt.Errorf("project %s (%s): the architect needs ops_repo as owner/name, not %q", p.Name, p.File, p.OpsRepo)
	}
	g := d.GitAs(b)
	cname, email := git.Identity(b.User)
	proposer := s.Checkouts.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
		Dir: s.Layout.Ops(p.Name, b.User), Name: cname, Email: email, Log: d.Log})
	o := architect.Options{
		Project: p.Name, Primary: p.PrimaryBranch,
		Forge: rp.Forge, Ops: rp.Forge.Client().Repo(owner, name), Proposer: proposer,
		Runner: d.FormulaRunner(rp), Sessions: claude.NewSessionStore(s.Layout.SessionStore(), nil),
		Deciders: d.MaintainersOf(b), Bots: d.Config.BotUsernames, Redactor: s.Redactor, Log: d.Log,
	}
	// The architect bot only reads the project; the filer bot, which may
	// write its issues, applies the architect's labels.
	if fb, err := d.Config.Bot(config.RoleFiler); err == nil {
		fc, err := s.ForgeAs(p, fb, d.Log)
		if err != nil {
			return nil, err
		}
		o.Labeler = fc
	}
	return architect.New(o), nil
}
