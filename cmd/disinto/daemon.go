package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

func (a *app) daemonCmd() *cobra.Command { return a.daemonCmdWith(agentRegistry) }

func (a *app) daemonCmdWith(registry func() daemon.Registry) *cobra.Command {
	var (
		h     daemon.HTTP
		grace time.Duration
	)
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
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			co, err := a.coreOptions()
			if err != nil {
				return err
			}
			return daemon.Run(cmd.Context(), cfg, daemon.Options{Core: co, Registry: registry(), HTTP: h, Grace: grace})
		},
	}
	a.envFlag(cmd.Flags(), &h.Listen, "listen", daemon.EnvListen, daemon.DefaultListen, "address of the webhook receiver and /healthz")
	a.envFlag(cmd.Flags(), &h.StatusListen, "status-listen", daemon.EnvStatusListen, daemon.DefaultStatusListen,
		"address of /status and /metrics (off loopback only with "+daemon.EnvStatusToken+")")
	a.envFlag(cmd.Flags(), &h.ReadTimeout, "read-timeout", daemon.EnvReadTimeout, daemon.DefaultReadTimeout.String(), "time a client has to send a whole request")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Minute, "how long running sessions may finish after SIGTERM")
	return cmd
}

// coreOptions are the core's settings from the command line and the
// environment: the data dir, the console logs, the sessions' environment
// and whether unisolated sessions are accepted.
func (a *app) coreOptions() (daemon.CoreOptions, error) {
	lo, err := a.logOptions()
	if err != nil {
		return daemon.CoreOptions{}, err
	}
	return daemon.CoreOptions{DataDir: a.dataDir, Log: lo, Console: a.stderr, Environ: a.env,
		AllowUnisolated: a.allowUnisolated, Formulas: formulas.FS, Version: version, Commit: buildCommit()}, nil
}

// layout names the paths under the data dir of --data-dir.
func (a *app) layout() datadir.Layout { return datadir.New(a.dataDir) }

// defaultGatewayListen is where a shared gateway listens: every address of
// its container, on the stack's internal network (compose publishes no
// port of it).
const defaultGatewayListen = ":8090"

func (a *app) gatewayCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the model gateway for the daemons of several agent containers",
		Long: "Serves the model gateway on its own, so that the daemons of several agent containers share it:\n" +
			"their sessions' keys, the budgets ([budget]) and each backend's max_sessions then hold across\n" +
			"all of them. The gateway holds the backends' credentials (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN\n" +
			"or the login in CLAUDE_CONFIG_DIR); the daemons get DISINTO_GATEWAY_URL (the gateway as their\n" +
			"sessions reach it) and DISINTO_GATEWAY_TOKEN (the admin token both sides hold, 16 characters or more).",
		Example: "  DISINTO_GATEWAY_TOKEN=... disinto gateway --listen :8090",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			lo, err := a.logOptions()
			if err != nil {
				return err
			}
			lo.Console, lo.Redactor = a.stderr, redact.New(cfg.Secrets()...)
			logs, err := logx.New(lo)
			if err != nil {
				return err
			}
			defer logs.Close()
			return daemon.ServeGateway(cmd.Context(), cfg, listen, cfg.Env.Get(gateway.TokenEnv), a.layout().GatewayDays(), logs.For("gateway"))
		},
	}
	a.envFlag(cmd.Flags(), &listen, "listen", gateway.ListenEnv, defaultGatewayListen, "address of the gateway")
	return cmd
}
