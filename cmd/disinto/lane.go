package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// devLimits turns a project's [limits] into the dev agent's limits.
func devLimits(cfg *config.Config, p *config.Project) dev.Limits {
	l := p.Limits
	return dev.Limits{
		CIFixes: l.CIFixAttempts, ReviewRounds: l.ReviewRounds, Rebases: l.RebaseRounds, MergeAttempts: l.MergeAttempts,
		CITimeout: l.CITimeout, ReviewTimeout: l.ReviewTimeout, InFlight: l.InFlight,
		SessionTimeout: cfg.Claude.Timeout, MaxTurns: 200,
	}
}

// ownersTimeout bounds the forge lookup of a repository's owners.
const ownersTimeout = 15 * time.Second

// maintainersOf returns the humans an escalation of the project
// @-mentions: the project file's maintainers, else the environment's
// (maintainers), else the repository's owners on the forge (its user, or
// its organisation's Owners team) as bot b sees them. The forge is asked
// once, when the agent is built; a forge that does not answer then leaves
// escalations without a mention, and says so.
func (d Deps) maintainersOf(b config.Bot) []string {
	if len(d.Project.Maintainers) > 0 {
		return d.Project.Maintainers
	}
	if m := maintainers(d.Config.Env); len(m) > 0 {
		return m
	}
	fc, err := forge.New(forge.Options{URL: d.Project.ForgeURL, Token: b.Token, User: b.User, HTTPClient: d.Services.HTTP,
		Logger: d.Log, Redactor: d.Services.Redactor})
	if err != nil {
		d.Log.Warn().Str("error", d.Services.Redactor.Error(err)).Msg("no maintainers to mention in escalations")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownersTimeout)
	defer cancel()
	owner, _ := d.Project.OwnerName()
	m, err := fc.RepoOwners(ctx, owner)
	if err != nil || len(m) == 0 {
		d.Log.Warn().Str("owner", owner).Str("error", d.Services.Redactor.Error(err)).
			Msg("could not read the repository's owners: escalations mention nobody (set maintainers in the project file)")
		return nil
	}
	return m
}

// ready returns the dev agent's readiness check: the model backend
// answers (claude.Prober, cached there). A runner that cannot probe is
// always ready.
func (s *Services) Ready(backend string) func(ctx context.Context) error {
	p, ok := s.Claude.(claude.Prober)
	if !ok {
		return nil
	}
	return func(ctx context.Context) error { return p.Probe(ctx, backend) }
}

// backendHealth is the last probe of every backend with a base URL, for
// /status; nil when the runner cannot probe.
func (s *Services) backendHealth() []claude.Health {
	if p, ok := s.Claude.(claude.Prober); ok {
		return p.Health()
	}
	return nil
}

// localJobRole is the scheduler role of a local-model dev agent: the dev
// role with the agent's name, so it has a job, a schedule and a status
// line of its own beside the project's default dev agent.
func localJobRole(name string) string { return string(config.RoleDev) + "@" + name }

// localStateDir is where a local-model dev agent keeps its per-issue
// state: apart from the default dev agent's, which lists only issue-N
// directories of <data>/state/<project>.
func (s *Services) localStateDir(p *config.Project, name string) string {
	return s.Layout.LaneState(p.Name, name)
}

// newLocalDevAgent builds the dev agent of [agents.<name>] for project p:
// it acts as the section's own bot (FORGE_TOKEN_<NAME>) on the backend
// named after the section, with its own clone and state.
func (c *Core) newLocalDevAgent(p *config.Project, la config.LocalAgent) (agent.Agent, config.Bot, error) {
	d := Deps{Config: c.Config, Project: p, Role: config.RoleDev, DataDir: c.DataDir,
		StateDir: c.Services.localStateDir(p, la.Name), Log: c.Logs.For(string(config.RoleDev)).With().Str("local_agent", la.Name).Logger(),
		Services: c.Services}
	fail := func(err error) (agent.Agent, config.Bot, error) {
		return nil, config.Bot{}, fmt.Errorf("%s: agents.%s: %w", p.Name, la.Name, err)
	}
	b, err := c.Config.LocalBot(la)
	if err != nil {
		return fail(err)
	}
	fc, err := c.Services.ForgeAs(p, b, d.Log)
	if err != nil {
		return fail(err)
	}
	// The dev formula in force for the project (the dev bot's and the ops
	// repository's overrides apply to every dev agent of it).
	live, err := c.Services.LiveFormula(context.Background(), p, config.RoleDev, "dev", dev.CheckFormula, d.Log)
	if err != nil {
		return fail(err)
	}
	rp := RoleParts{Bot: b, Forge: fc, Formula: live.Formula(), Live: live, Settings: config.RoleSettings{Enabled: true, Interval: la.PollInterval, Model: la.Model, Backend: la.Name}}
	ag, err := d.buildDev(rp, d.StateDir)
	if err != nil {
		return fail(err)
	}
	return ag, b, nil
}

// claudeBackend is the runner's view of configured backend b: its
// compaction threshold (compact_pct, or the daemon's
// CLAUDE_AUTOCOMPACT_PCT_OVERRIDE for the default backend) becomes the
// sessions' CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, and the default backend's
// CLAUDE_CODE_OAUTH_TOKEN theirs, which the environment allowlist would
// otherwise drop.
func claudeBackend(b config.Backend) claude.Backend {
	cb := claude.Backend{Name: b.Name, BaseURL: b.BaseURL, APIKey: b.APIKey, Model: b.Model, MaxSessions: b.MaxSessions}
	if b.CompactPct > 0 {
		cb.Env = map[string]string{config.AutoCompactEnv: strconv.Itoa(b.CompactPct)}
	}
	// The subscription's token is the model credential, as an API key
	// is; it goes to the default backend only, never to a local one.
	if b.OAuthToken != "" {
		if cb.Env == nil {
			cb.Env = map[string]string{}
		}
		cb.Env[config.OAuthTokenEnv] = b.OAuthToken
	}
	return cb
}

// addLocalDevJobs schedules, beside project p's default dev agent, one dev
// agent per [agents.<name>] section that plays dev, each acting as its own
// bot on its own backend every poll_interval. The forge's claim protocol
// keeps two dev agents of one project off each other's issues.
func (a *app) addLocalDevJobs(d *Daemon, p *config.Project, spec config.RoleSpec) error {
	for _, la := range d.Config.LocalDevAgents(p) {
		ag, bot, err := d.newLocalDevAgent(p, la)
		if err != nil {
			return err
		}
		if r, ok := ag.(agent.Reporter); ok {
			d.reporters = append(d.reporters, r)
		}
		role := localJobRole(la.Name)
		g := d.gates.of(p.ForgeURL, bot, p.Name+"/"+role, d.Services.HTTP, d.Logs.For("daemon"))
		j := jobFor(d.Runtime, ag, p, spec, g)
		j.Role, j.Interval = role, la.PollInterval
		if err := d.sched.Add(j); err != nil {
			return err
		}
		d.localDev[p.Name] = append(d.localDev[p.Name], role)
		d.log.Info().Str("project", p.Name).Str("agent", la.Name).Str("bot", bot.User).Dur("interval", la.PollInterval).
			Msg("local-model dev agent scheduled")
	}
	return nil
}

// laneTrigger passes webhook triggers to the scheduler, and a trigger of a
// project's dev agent to its local-model dev agents too: an event that
// wakes one dev agent wakes them all.
type laneTrigger struct {
	sched interface {
		Trigger(project, role string) bool
	}
	localDev map[string][]string // project → local dev job roles
}

// Trigger implements webhook.Triggerer.
func (t laneTrigger) Trigger(project, role string) bool {
	ok := t.sched.Trigger(project, role)
	if role == string(config.RoleDev) {
		for _, r := range t.localDev[project] {
			ok = t.sched.Trigger(project, r) || ok
		}
	}
	return ok
}
