package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/scheduler"
)

// projectSpread is the window over which projects' slots are spread.
const projectSpread = time.Minute

type daemonFlags struct {
	listen       string
	statusListen string
	readTimeout  string
	grace        time.Duration
}

func (a *app) daemonCmd() *cobra.Command { return a.daemonCmdWith(agentRegistry) }

func (a *app) daemonCmdWith(registry func() map[config.Role]Factory) *cobra.Command {
	var f daemonFlags
	cmd := &cobra.Command{
		Use:     "daemon",
		Short:   "Run every agent of every project on its schedule, with webhooks, /healthz, /metrics and /status",
		Example: "  disinto daemon\n  disinto daemon --listen :8080 --status-listen 127.0.0.1:8081",
		Long: "Loads projects/*.toml and the environment, takes the data dir lock, schedules the agents\n" +
			"(AGENT_ROLES, POLL_INTERVAL, GARDENER_INTERVAL, ...) and runs until SIGTERM. It serves\n" +
			"/healthz and the Forgejo webhook receiver /hooks/forgejo (DISINTO_WEBHOOK_SECRET) on --listen,\n" +
			"and /status and /metrics on --status-listen: loopback unless DISINTO_STATUS_TOKEN is set, which\n" +
			"requests must then send as a bearer token. Shutdown stops new work, gives running sessions\n" +
			"--grace to finish, then cancels them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDaemon(cmd.Context(), f, registry())
		},
	}
	cmd.Flags().StringVar(&f.listen, "listen", a.envOr(EnvListen, DefaultListen), "address of the webhook receiver and /healthz")
	cmd.Flags().StringVar(&f.statusListen, "status-listen", a.envOr(EnvStatusListen, DefaultStatusListen),
		"address of /status and /metrics (off loopback only with "+EnvStatusToken+")")
	cmd.Flags().StringVar(&f.readTimeout, "read-timeout", a.envOr(EnvReadTimeout, DefaultReadTimeout.String()), "time a client has to send a whole request")
	cmd.Flags().DurationVar(&f.grace, "grace", 5*time.Minute, "how long running sessions may finish after SIGTERM")
	return cmd
}

// daemon holds the wired parts of a running daemon: the core a one-shot
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
	// unscheduled says, per project and role left out, why (errNotScheduled).
	unscheduled []string
	// reporters are the agents that say what work they hold, for status.
	reporters []agent.Reporter
	// localDev names, per project, the scheduler roles of its local-model
	// dev agents (dev@<name>).
	localDev map[string][]string
	// vaults are the projects' vault dispatchers.
	vaults vaultAgents
}

func (a *app) runDaemon(ctx context.Context, f daemonFlags, registry map[config.Role]Factory) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	hs, err := checkHTTPSettings(f, cfg.Env.Get(EnvStatusToken))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.dataDir, 0o750); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	lock, err := LockDataDir(a.dataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	moves, err := a.migrateDataDir(cfg)
	if err != nil {
		return err
	}

	hookLn, statusLn, err := openListeners(f, hs.statusToken)
	if err != nil {
		return err
	}
	// Serving closes them; these cover the returns before that.
	defer hookLn.Close()
	defer statusLn.Close()
	d, err := a.newDaemon(cfg, registry)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	LogMoves(d.log, moves)

	hookSrv := newHTTPServer(d.hookMux(), hs.readTimeout)
	statusSrv := newHTTPServer(requireBearer(hs.statusToken, d.statusMux()), hs.readTimeout)
	info := Info{PID: os.Getpid(), Listen: hookLn.Addr().String(), Status: statusLn.Addr().String(), Started: d.started}
	if err := writeDaemonInfo(a.dataDir, info); err != nil {
		return err
	}
	defer os.Remove(a.layout().DaemonInfo())
	d.log.Info().Str("listen", info.Listen).Str("status_listen", info.Status).Bool("status_token", hs.statusToken != "").
		Int("projects", len(cfg.Projects)).Int("jobs", len(d.sched.Snapshot())).Msg("daemon started")
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
	for _, p := range cfg.Projects {
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
	d.log.Info().Dur("grace", f.grace).Int("sessions", len(d.Runtime.Running())).Msg("shutting down: no new work; waiting for running sessions")
	graceCtx, cancelGrace := context.WithTimeout(context.Background(), f.grace)
	drained := waitDrained(graceCtx, schedDone, d.Runtime)
	cancelGrace()
	if !drained {
		d.log.Warn().Int("sessions", len(d.Runtime.Running())).Msg("grace period over; cancelling running sessions")
		cancelJobs()
		hardCtx, cancelHard := context.WithTimeout(context.Background(), cancelWait)
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

// newDaemon builds the core (with metrics) and the scheduler, with one
// job per enabled (project, role) that has an implementation.
func (a *app) newDaemon(cfg *config.Config, registry map[config.Role]Factory) (_ *Daemon, err error) {
	c, err := a.newCore(cfg, coreOptions{metrics: true, runtimeLog: "daemon"})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	d := &Daemon{Core: c, started: time.Now(), log: c.Logs.For("daemon"), localDev: map[string][]string{}}
	d.ready.d = d
	store, err := scheduler.OpenStore(a.layout().Schedule())
	if err != nil {
		return nil, err
	}
	d.sched = scheduler.New(scheduler.Options{Store: store, Log: c.Logs.For("scheduler"), Redactor: c.Redactor})
	if err := a.addJobs(d, registry); err != nil {
		return nil, err
	}
	return d, nil
}
