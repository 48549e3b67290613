package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
)

func (a *app) runCmd() *cobra.Command { return a.runCmdWith(agentRegistry) }

func (a *app) runCmdWith(registry func() daemon.Registry) *cobra.Command {
	var project string
	once := true
	cmd := &cobra.Command{
		Use:     "run <role> --project P --once",
		Short:   "Run one tick of one agent in the foreground and wait for the work it starts",
		Example: "  disinto run dev --project widgets --once\n  disinto run review --project widgets",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			role := config.Role(args[0])
			if err := role.Validate(); err != nil {
				return usageError{err}
			}
			if project == "" {
				return usageError{errors.New("--project is required")}
			}
			if !once {
				return usageError{errors.New("only --once is supported; use disinto daemon for scheduled runs")}
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			p := cfg.Project(project)
			if p == nil {
				return usageError{fmt.Errorf("unknown project %q (see disinto config check)", project)}
			}
			factory, ok := registry()[role]
			if !ok {
				return fmt.Errorf("role %s has no implementation yet", role)
			}
			if err := os.MkdirAll(a.dataDir, 0o750); err != nil {
				return fmt.Errorf("create data dir: %w", err)
			}
			// Per-issue state must have one writer: not next to a daemon.
			lock, err := daemon.LockDataDir(a.dataDir)
			if err != nil {
				return err
			}
			defer lock.Release()
			moves, err := daemon.MigrateDataDir(a.layout(), cfg)
			if err != nil {
				return err
			}
			co, err := a.coreOptions()
			if err != nil {
				return err
			}
			co.RuntimeLog = string(role)
			co.ForgeSilence = forge.OneShotSilence
			c, err := daemon.NewCore(cfg, co)
			if err != nil {
				return err
			}
			daemon.LogMoves(c.Logs.For(string(role)), moves)
			defer func() { _ = c.Close() }()
			ag, err := c.NewAgent(factory, p, role)
			if err != nil {
				return err
			}
			rt, log := c.Runtime, c.Logs.For(string(role))
			tickErr := rt.Tick(cmd.Context(), ag, p, role, agent.CauseManual)
			// Work started by the tick belongs to this run: wait for it.
			if err := rt.Wait(cmd.Context()); err != nil {
				// The work saw the cancellation too; let it stop its
				// processes and record the interruption before the ledger
				// closes and the lock is released.
				hardCtx, cancelHard := context.WithTimeout(context.Background(), daemon.CancelWait)
				defer cancelHard()
				if rt.Wait(hardCtx) != nil {
					log.Error().Msg("work did not stop after cancellation; exiting anyway")
				}
				return fmt.Errorf("interrupted while work was running: %w", err)
			}
			return tickErr
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project name (required)")
	cmd.Flags().BoolVar(&once, "once", true, "run one tick and exit")
	return cmd
}
