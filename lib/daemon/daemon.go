// Package daemon is the runtime of `disinto daemon`: the services every
// agent shares, the scheduler with one job per row of the role table and
// project, the token gates, readiness, the bots' journals, the ops
// checkouts, the webhook receiver and the status listener with /status,
// /metrics and the status page. The roles reach it through their
// constructors (a Registry); it imports no agent.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/scheduler"
)

// projectSpread is the window over which projects' slots are spread.
const projectSpread = time.Minute

// CancelWait bounds how long cancelled work may take to stop its
// processes and record its outcome (a claude process group gets its kill
// grace, then SIGKILL).
const CancelWait = 10 * time.Second

// Options are what a daemon runs: its core, the constructors of its
// roles, its HTTP listeners and how long running sessions may finish
// after a stop.
type Options struct {
	Core     CoreOptions
	Registry Registry
	HTTP     HTTP
	Grace    time.Duration
}

// Daemon holds the wired parts of a running daemon: the core a one-shot
// run builds too, and the scheduler with one job per agent.
type Daemon struct {
	*Core
	started       time.Time
	log           zerolog.Logger
	sched         *scheduler.Scheduler
	gates         gates
	ops           opsCheckouts
	ready         readiness
	unimplemented []string
	// unscheduled says, per project and role left out, why (ErrNotScheduled).
	unscheduled []string
	// reporters are the agents that say what work they hold, for status.
	reporters []agent.Reporter
	// localDev names, per project, the scheduler roles of its lanes
	// (dev@<name>).
	localDev map[string][]string
	// vaults are the projects' vault dispatchers.
	vaults vaultAgents
	// agents are the agents built, by job (project/role).
	agents map[string]agent.Agent
	// replica is this daemon's place among the agent replicas; nil for
	// the single replica that owns every project.
	replica *ReplicaInfo
}

// Run runs the daemon of cfg until ctx ends: it takes the data dir's
// lock, migrates its layout, serves the listeners, schedules every role
// of every project and, once ctx ends, stops claiming work, gives running
// sessions the grace period and then cancels them.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	hs, err := checkHTTPSettings(o.HTTP, cfg.Env.Get(EnvStatusToken))
	if err != nil {
		return err
	}
	dataDir := o.Core.DataDir
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	lock, err := LockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	moves, err := MigrateDataDir(datadir.New(dataDir), cfg)
	if err != nil {
		return err
	}

	hookLn, statusLn, err := openListeners(o.HTTP, hs.statusToken)
	if err != nil {
		return err
	}
	// Serving closes them; these cover the returns before that.
	defer hookLn.Close()
	defer statusLn.Close()
	d, err := New(cfg, o.Core, o.Registry)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	LogMoves(d.log, moves)

	hookSrv := newHTTPServer(d.HookHandler(), hs.readTimeout)
	statusSrv := newHTTPServer(requireBearer(hs.statusToken, d.StatusHandler()), hs.readTimeout)
	info := Info{PID: os.Getpid(), Listen: hookLn.Addr().String(), Status: statusLn.Addr().String(), Started: d.started}
	if err := writeDaemonInfo(dataDir, info); err != nil {
		return err
	}
	defer os.Remove(datadir.New(dataDir).DaemonInfo())
	d.log.Info().Str("listen", info.Listen).Str("status_listen", info.Status).Bool("status_token", hs.statusToken != "").
		Str("replica", cfg.Shard.String()).Int("projects", len(d.Config.Projects)).Int("jobs", len(d.sched.Snapshot())).Msg("daemon started")
	// Every bot token is tried once before any job runs: a rejected one
	// disables its jobs with one line, instead of failing every tick.
	for _, gt := range d.gates.all() {
		if err := gt.check(ctx); err != nil {
			d.log.Warn().Str("bot", gt.bot.User).Str("error", d.Redactor.Error(err)).Msg("could not check the bot's token; its jobs find out")
		}
	}
	// The ops checkouts every later role works in: cloned, with the ops
	// layout made where it is missing. A forge that is down now only
	// delays this.
	for _, p := range d.Config.Projects {
		if d.ops.open(d.Services, p) == nil {
			continue
		}
		switch err := d.ops.sync(ctx, p, d.Redactor.Error); {
		case errors.Is(err, ops.ErrProtected):
			d.log.Warn().Str("project", p.Name).Strs("dirs", ops.Layout).
				Msg("the ops repository lacks part of its layout and its primary branch is protected: add the directories by pull request")
		case err != nil:
			d.log.Warn().Str("project", p.Name).Str("error", d.Redactor.Error(err)).Msg("ops checkout not synced")
		}
	}

	// Two contexts: ctx (signals) stops claiming new work; jobsCtx is
	// cancelled only after the grace period, and kills running sessions.
	jobsCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	// A server that dies takes health checks and webhooks with it: shut
	// down like on SIGTERM and exit non-zero, so the container restarts.
	ctx, stopDaemon := context.WithCancel(ctx)
	defer stopDaemon()
	var g errgroup.Group
	// Journals drain until the very end; what is still queued lands after
	// the next start.
	journalsCtx, stopJournals := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJournals()
	g.Go(func() error {
		d.journals.run(journalsCtx)
		return nil
	})
	// The projects' dashboard issues follow the status until the stop.
	boards := newDashboards(d.Services, d.Config, d.Enablement, d.log.With().Str("part", "dashboard").Logger())
	g.Go(func() error {
		boards.run(ctx, DashboardInterval, d.Status)
		return nil
	})
	// The projects' track records follow the forge.
	records := newTrackRecords(d.Services, d.Config, d.log.With().Str("part", "track-record").Logger())
	g.Go(func() error {
		records.run(ctx, TrackRecordInterval)
		return nil
	})
	// The projects' evidence, once a day, into their ops repositories.
	ev := newEvidence(d.Services, d.Config, d.log.With().Str("part", "evidence").Logger())
	g.Go(func() error {
		ev.run(ctx, EvidenceCheck)
		return nil
	})
	schedDone := make(chan struct{})
	g.Go(func() error {
		defer close(schedDone)
		return d.sched.Run(ctx, jobsCtx)
	})
	for _, s := range []struct {
		name string
		srv  *http.Server
		ln   net.Listener
	}{{"webhook", hookSrv, hookLn}, {"status", statusSrv, statusLn}} {
		g.Go(func() error {
			if err := serve(s.srv, s.ln); err != nil {
				d.log.Error().Err(err).Str("server", s.name).Msg("HTTP server failed; shutting down")
				stopDaemon()
				return fmt.Errorf("serve %s: %w", s.name, err)
			}
			return nil
		})
	}

	<-ctx.Done()
	d.log.Info().Dur("grace", o.Grace).Int("sessions", len(d.Runtime.Running())).Msg("shutting down: no new work; waiting for running sessions")
	graceCtx, cancelGrace := context.WithTimeout(context.Background(), o.Grace)
	drained := waitDrained(graceCtx, schedDone, d.Runtime)
	cancelGrace()
	if !drained {
		d.log.Warn().Int("sessions", len(d.Runtime.Running())).Msg("grace period over; cancelling running sessions")
		cancelJobs()
		hardCtx, cancelHard := context.WithTimeout(context.Background(), CancelWait)
		if !waitDrained(hardCtx, schedDone, d.Runtime) {
			d.log.Error().Msg("sessions did not stop after cancellation; exiting anyway")
		}
		cancelHard()
	}
	shutCtx, cancelShut := context.WithTimeout(context.Background(), 5*time.Second)
	_, _ = hookSrv.Shutdown(shutCtx), statusSrv.Shutdown(shutCtx)
	cancelShut()
	stopJournals()
	if err := g.Wait(); err != nil {
		return err
	}
	d.log.Info().Msg("daemon stopped")
	return nil
}

// waitDrained waits until the scheduler loop and all background work have
// returned, or ctx ends; it reports whether everything returned.
func waitDrained(ctx context.Context, schedDone <-chan struct{}, rt *agent.Runtime) bool {
	select {
	case <-schedDone:
	case <-ctx.Done():
		return false
	}
	return rt.Wait(ctx) == nil
}

// New builds the core (with metrics) and the scheduler, with one job per
// enabled (project, role) that has a constructor in registry, of the
// projects this replica owns (all of them unless cfg.Shard splits them).
// Run starts it; a test may use what New built without running it. Close
// closes it.
func New(cfg *config.Config, co CoreOptions, registry Registry) (_ *Daemon, err error) {
	co.Metrics, co.RuntimeLog = true, "daemon"
	cfg, replica := OwnedConfig(cfg)
	c, err := NewCore(cfg, co)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	d := &Daemon{Core: c, started: time.Now(), log: c.Logs.For("daemon"), localDev: map[string][]string{}, agents: map[string]agent.Agent{}, replica: replica}
	d.ready.d = d
	store, err := scheduler.OpenStore(datadir.New(co.DataDir).Schedule())
	if err != nil {
		return nil, err
	}
	d.sched = scheduler.New(scheduler.Options{Store: store, Log: c.Logs.For("scheduler"), Redactor: c.Redactor})
	if err := d.addJobs(registry); err != nil {
		return nil, err
	}
	return d, nil
}

// Scheduler is the daemon's scheduler, with one job per agent: for tests
// and tools that look at or drive the jobs of a daemon New built.
func (d *Daemon) Scheduler() *scheduler.Scheduler { return d.sched }

// Agent is the agent of job (project/role, or project/dev@name for a
// lane) the daemon built; nil when it built none.
func (d *Daemon) Agent(job string) agent.Agent { return d.agents[job] }
