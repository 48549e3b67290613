package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/agents/filer"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/scheduler"
)

// The sprint filer (agents/filer) is a role entry of its own, not part of
// the architect's tick: it acts as filer-bot, which may write the project's
// issues and only read the ops repository, while the architect writes the
// ops repository and only reads the project. It runs on the architect's
// cadence (its interval or cron schedule; 6 h by default), at every start,
// and within seconds of any event of the ops repository, such as a sprint
// pull request being merged.

// newFilerAgent builds the filer of one project, acting as filer-bot
// (FORGE_FILER_TOKEN). It refuses to run as the dev bot (W-FI-2): the
// filer's identity is what keeps its writes to the project's issues.
func newFilerAgent(d agentDeps) (agent.Agent, error) {
	p := d.Project
	b, err := d.Config.Bot(config.RoleFiler)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", filer.ErrNoIdentity, err)
	case b.Fallback:
		return nil, fmt.Errorf("%w: FORGE_FILER_TOKEN is not set, and the filer does not act as the dev bot (run disinto init)", filer.ErrNoIdentity)
	case p.OpsRepo == "":
		return nil, fmt.Errorf("project %s (%s): the filer needs an ops repository (ops_repo)", p.Name, p.File)
	}
	fc, err := d.Services.forgeAs(p, b, d.Log)
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(p.OpsRepo, "/")
	return filer.New(filer.Options{Project: p.Name, Repo: p.Repo, Bot: b.User, Forge: fc, Ops: fc.Client().Repo(owner, name), Log: d.Log})
}

// addFilerJobs schedules the filer of every project with an ops
// repository and the architect enabled, on the architect's cadence; a
// project without a filer identity is said once and left out.
func (a *app) addFilerJobs(d *daemon, registry map[config.Role]agentFactory) error {
	factory, ok := registry[config.RoleFiler]
	if !ok {
		return nil
	}
	for _, p := range d.cfg.Projects {
		if p.OpsRepo == "" || !d.cfg.RoleEnabled(p, config.RoleArchitect) {
			continue
		}
		ag, err := d.newAgent(factory, p, config.RoleFiler)
		if errors.Is(err, filer.ErrNoIdentity) {
			d.log.Info().Str("project", p.Name).Str("reason", d.redactor.String(err.Error())).Msg("sprint filer not scheduled")
			continue
		}
		if err != nil {
			return err
		}
		bot, err := d.cfg.Bot(config.RoleFiler)
		if err != nil {
			return err
		}
		g := d.gates.of(p.ForgeURL, bot, p.Name+"/"+string(config.RoleFiler), d.services.http, d.logs.For("daemon"))
		if err := d.sched.Add(filerJob(jobFor(d.rt, ag, p, config.RoleFiler, g), p)); err != nil {
			return err
		}
	}
	return nil
}

// filerJob sets j, the filer's job of p, to the architect's cadence, a
// few seconds after the architect's slot, and runs it at every start:
// sprints merged while the daemon was down are filed at once.
func filerJob(j scheduler.Job, p *config.Project) scheduler.Job {
	arch := p.Roles[config.RoleArchitect]
	j.Interval = arch.Interval
	if j.Interval <= 0 {
		j.Interval = config.DefaultIntervals[config.RoleArchitect]
	}
	if sch := arch.Schedule; sch != nil {
		j.Schedule = sch
	}
	j.Offset = scheduler.ProjectSlot(p.Name, projectSpread) + roleStagger[config.RoleArchitect] + filerStagger
	j.FirstRun = scheduler.FirstRunEveryStart
	return j
}

// filerStagger puts the filer after the architect in its project's slot.
const filerStagger = 5 * time.Second

// filerTrigger wakes the project's filer on every event of its ops
// repository (a merged sprint pull request is filed within seconds; the
// architect's cadence is the floor) and hands every event on to next.
type filerTrigger struct {
	sched interface {
		Trigger(project, role string) bool
	}
	next interface {
		Trigger(project, role string) bool
	}
}

// Trigger implements webhook.Triggerer.
func (t filerTrigger) Trigger(project, role string) bool {
	woke := false
	if p, ok := strings.CutSuffix(project, opsAliasSuffix); ok {
		woke = t.sched.Trigger(p, string(config.RoleFiler))
	}
	return t.next.Trigger(project, role) || woke
}
