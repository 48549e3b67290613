package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/scheduler"
)

// ErrNotScheduled, wrapped in a constructor's error, leaves that role
// of that project out of the schedule (with a warning and a line in
// status for a scheduled role, a log line for a companion) instead of
// stopping the daemon: a role the operator has not set up, such as the
// architect without its own identity, must not stop the roles that work.
// A role whose bot has no token and no fallback (config.ErrNoIdentity) is
// left out the same way.
var ErrNotScheduled = errors.New("role not scheduled")

// addJobs schedules one job per (project, role) the role table runs, in
// the table's order, and the lanes of the roles that have them.
func (d *Daemon) addJobs(registry Registry) error {
	missing := map[config.Role]bool{}
	for _, p := range d.Config.Projects {
		for _, spec := range config.RoleSpecs() {
			if !d.Config.RoleRuns(p, spec) {
				continue
			}
			factory, ok := registry[spec.Name]
			if !ok {
				missing[spec.Name] = true
				continue
			}
			if err := d.addRoleJob(p, spec, factory); err != nil {
				return err
			}
		}
	}
	for _, spec := range config.RoleSpecs() {
		if missing[spec.Name] {
			d.unimplemented = append(d.unimplemented, string(spec.Name))
		}
	}
	if len(d.unimplemented) > 0 {
		d.log.Warn().Strs("roles", d.unimplemented).Msg("configured roles have no implementation yet; not scheduled")
	}
	return nil
}

// addRoleJob builds spec's agent of project p and schedules it, with its
// journal, its token's gate and its lanes.
func (d *Daemon) addRoleJob(p *config.Project, spec config.RoleSpec, factory Factory) error {
	role := spec.Name
	ag, err := d.NewAgent(factory, p, role)
	if errors.Is(err, ErrNotScheduled) || errors.Is(err, config.ErrNoIdentity) {
		why := d.Redactor.String(err.Error())
		if !spec.Scheduled {
			d.log.Info().Str("project", p.Name).Str("role", string(role)).Str("reason", why).Msg("role not scheduled")
			return nil
		}
		d.log.Warn().Str("project", p.Name).Str("role", string(role)).Str("reason", why).Msg("role not scheduled")
		d.unscheduled = append(d.unscheduled, why)
		return nil
	}
	if err != nil {
		return err
	}
	d.agents[p.Name+"/"+string(role)] = ag
	if r, ok := ag.(agent.Reporter); ok {
		d.reporters = append(d.reporters, r)
	}
	if r, ok := ag.(ActionReporter); ok {
		d.vaults.add(r)
	}
	// A role with sessions keeps its bot's journal. An agent acts as its
	// role's bot; one that needs no token (none configured, as in tests)
	// has no gate.
	if spec.Formula != "" {
		d.journals.add(d.Services, p, role, d.Logs.For("daemon"))
	}
	var g *gate
	if bot, err := d.Config.Bot(role); err == nil {
		g = d.gates.of(p.ForgeURL, bot, p.Name+"/"+string(role), d.Services.HTTP, d.Logs.For("daemon"))
	}
	j := jobFor(d.Runtime, ag, p, spec, g)
	if d.replica != nil {
		j = afterHandover(j)
	}
	if err := d.sched.Add(j); err != nil {
		return err
	}
	if spec.Lanes {
		return d.addLaneJobs(p, spec, factory)
	}
	return nil
}

// stagger is spec's place inside its project's slot: its own stagger,
// after that of the role it follows.
func stagger(spec config.RoleSpec) time.Duration {
	d := spec.Stagger
	if f, ok := config.SpecOf(spec.Follows); ok && spec.Follows != "" {
		d += f.Stagger
	}
	return d
}

// jobFor turns one agent into a scheduler job with the cadence, stagger
// and first run of its row of the role table. A job whose bot's token the
// forge rejects runs no tick until the token authenticates again (g
// re-checks it at each run); a tick that meets a rejected token closes g.
func jobFor(rt *agent.Runtime, ag agent.Agent, p *config.Project, spec config.RoleSpec, g *gate) scheduler.Job {
	j := scheduler.Job{Project: p.Name, Role: string(spec.Name),
		Offset: scheduler.ProjectSlot(p.Name, projectSpread) + stagger(spec)}
	var sch *config.Schedule
	if j.Interval, sch = p.Cadence(spec); sch != nil {
		j.Schedule = sch // a nil *Schedule would be a non-nil interface
	}
	switch spec.Start {
	case config.StartAtOnce:
		j.FirstRun = scheduler.FirstRunEveryStart
	case config.StartAfterFinish:
		j.AfterFinish = true
	default:
		j.FirstRun = scheduler.FirstRunAfterInterval
	}
	role := spec.Name
	j.Run = func(ctx context.Context, t scheduler.Tick) error {
		cause := agent.CauseSchedule
		if t.Cause == scheduler.CauseTrigger {
			cause = agent.CauseEvent
		}
		if g != nil && g.isClosed() {
			if err := g.check(ctx); err != nil || g.isClosed() {
				return nil // said when it closed; said again when it opens
			}
		}
		err := rt.Tick(ctx, ag, p, role, cause)
		if errors.Is(err, agent.ErrPaused) {
			return nil
		}
		var te *agent.TickError
		if errors.As(err, &te) && te.Code == ledger.CodeForgeUnauthorized && g != nil {
			if cerr := g.check(ctx); cerr == nil && g.isClosed() {
				return nil
			}
		}
		return err
	}
	return j
}
