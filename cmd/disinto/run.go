package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// cancelWait bounds how long cancelled work may take to stop its
// processes and record its outcome (a claude process group gets its kill
// grace, then SIGKILL).
const cancelWait = 10 * time.Second

func (a *app) runCmd() *cobra.Command { return a.runCmdWith(agentRegistry) }

func (a *app) runCmdWith(registry func() map[config.Role]agentFactory) *cobra.Command {
	var project string
	once := true
	cmd := &cobra.Command{
		Use:   "run <role> --project P --once",
		Short: "Run one tick of one agent in the foreground and wait for the work it starts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			role := config.Role(args[0])
			if err := role.Validate(); err != nil {
				return usageError{err}
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
			lock, err := lockDataDir(a.dataDir)
			if err != nil {
				return err
			}
			defer lock.release()
			// One redactor for everything the run writes.
			red := redact.New(cfg.Secrets()...)
			logs, err := logx.New(logx.Options{Dir: filepath.Join(a.dataDir, "logs"), Debug: a.debug,
				Console: a.stderr, Redactor: red})
			if err != nil {
				return err
			}
			defer logs.Close()
			led, err := ledger.Open(ledgerDir(a.dataDir), ledger.Options{Redactor: red})
			if err != nil {
				return err
			}
			defer led.Close()
			log := logs.For(string(role))
			svc, err := newServices(cfg, red, a.dataDir, nil, a.env, a.allowUnisolated, logs.For("claude"))
			if err != nil {
				return err
			}
			ag, err := factory(agentDeps{Config: cfg, Project: p, Role: role, DataDir: a.dataDir,
				StateDir: filepath.Join(a.dataDir, "state", p.Name), Log: log, Services: svc})
			if err != nil {
				return fmt.Errorf("%s: %s agent: %w", p.Name, role, err)
			}
			rt := agent.New(agent.Options{Ledger: led, Enablement: agent.NewEnablement(filepath.Join(a.dataDir, "agents.json"), nil),
				Log: log, TickTimeout: cfg.Policy.TickTimeout})
			tickErr := rt.Tick(cmd.Context(), ag, p, role, agent.CauseManual)
			// Work started by the tick belongs to this run: wait for it.
			if err := rt.Wait(cmd.Context()); err != nil {
				// The work saw the cancellation too; let it stop its
				// processes and record the interruption before the ledger
				// closes and the lock is released.
				hardCtx, cancelHard := context.WithTimeout(context.Background(), cancelWait)
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
	_ = cmd.MarkFlagRequired("project")
	return cmd
}
