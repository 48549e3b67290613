package daemon

import (
	"context"
	"fmt"
	"strconv"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
)

// Ready returns the dev agent's readiness check: the model backend
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

// laneJobRole is the scheduler role of a lane: the role with the lane's
// name (dev@<name>), so it has a job, a schedule and a status line of its
// own beside the project's agent of the role.
func laneJobRole(role config.Role, name string) string { return string(role) + "@" + name }

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

// addLaneJobs schedules, beside project p's agent of spec's role, one
// agent per [agents.<name>] section that plays the role (a local-model
// dev agent), built by the role's factory as a lane: each acts as its own
// bot on its own backend every poll_interval, with state of its own. The
// forge's claim protocol keeps two dev agents of one project off each
// other's issues.
func (d *Daemon) addLaneJobs(p *config.Project, spec config.RoleSpec, factory Factory) error {
	for _, la := range d.Config.LocalDevAgents(p) {
		la := la
		bot, err := d.Config.LocalBot(la)
		if err != nil {
			return fmt.Errorf("%s: agents.%s: %w", p.Name, la.Name, err)
		}
		ag, err := factory(Deps{Config: d.Config, Project: p, Role: spec.Name, Lane: &la, DataDir: d.DataDir,
			StateDir: d.Services.Layout.LaneState(p.Name, la.Name),
			Log:      d.Logs.For(string(spec.Name)).With().Str("local_agent", la.Name).Logger(),
			Services: d.Services, Runtime: d.Runtime, Metrics: d.Metrics})
		if err != nil {
			return fmt.Errorf("%s: agents.%s: %w", p.Name, la.Name, err)
		}
		d.agents[p.Name+"/"+laneJobRole(spec.Name, la.Name)] = ag
		if r, ok := ag.(agent.Reporter); ok {
			d.reporters = append(d.reporters, r)
		}
		role := laneJobRole(spec.Name, la.Name)
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
