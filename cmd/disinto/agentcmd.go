package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
)

func (a *app) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agent",
		Short:   "Pause, resume and list agents (takes effect at the next tick, survives restarts)",
		Example: "  disinto agent pause dev --project widgets\n  disinto agent resume dev --project widgets\n  disinto agent list",
	}
	enablement := func() *agent.Enablement {
		return daemon.OpenEnablement(a.layout())
	}
	toggle := func(use, short string, fn func(*agent.Enablement, config.Role, string) error) *cobra.Command {
		var project string
		c := &cobra.Command{
			Use:     use + " <role> [--project P]",
			Short:   short,
			Example: "  disinto agent " + use + " dev\n  disinto agent " + use + " review --project widgets",
			Args:    cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				role := config.Role(args[0])
				if err := role.Validate(); err != nil {
					return usageError{err}
				}
				if project != "" {
					// A pause of a project that does not exist would
					// pause nothing and say it did.
					cfg, err := a.loadConfig()
					if err != nil {
						return err
					}
					if cfg.Project(project) == nil {
						return usageError{fmt.Errorf("unknown project %q (see disinto config check)", project)}
					}
				}
				if err := fn(enablement(), role, project); err != nil {
					return err
				}
				where := "all projects"
				if project != "" {
					where = "project " + project
				}
				fmt.Fprintf(a.stdout, "%s %sd for %s\n", role, use, where)
				return nil
			},
		}
		c.Flags().StringVar(&project, "project", "", "only this project (default: all)")
		return c
	}
	cmd.AddCommand(
		toggle("pause", "Pause a role", (*agent.Enablement).Pause),
		toggle("resume", "Resume a paused role", (*agent.Enablement).Resume),
		&cobra.Command{
			Use:     "list",
			Short:   "List paused roles",
			Example: "  disinto agent list",
			Args:    cobra.NoArgs,
			RunE: func(_ *cobra.Command, _ []string) error {
				ps, err := enablement().List()
				if err != nil {
					return err
				}
				if len(ps) == 0 {
					fmt.Fprintln(a.stdout, "no agent is paused")
				}
				for _, p := range ps {
					where := p.Project
					if where == "" {
						where = "(all projects)"
					}
					fmt.Fprintf(a.stdout, "%-11s paused  %-20s since %s\n", p.Role, where, p.Since.Format("2006-01-02 15:04"))
				}
				return nil
			},
		},
	)
	return cmd
}
