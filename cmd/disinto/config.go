package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/config"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "config",
		Short:   "Inspect the configuration",
		Example: "  disinto config check",
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "check",
		Short:   "Validate project files and the environment",
		Example: "  disinto config check\n  disinto config check --projects-dir ./projects --env-file .env",
		Long: "Validates every projects/*.toml and the environment (the env file overlaid by the process\n" +
			"environment). Prints one line per problem as file:line: key: message and exits 1 when there\n" +
			"are any.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "ok: %d project(s), roles %v\n", len(cfg.Projects), cfg.Roles)
			for _, p := range cfg.Projects {
				fmt.Fprintf(a.stdout, "  %s  %s on %s (%s)\n", p.Name, p.Repo, p.ForgeURL, p.File)
			}
			return nil
		},
	})
	return cmd
}

// loadConfig loads and validates the configuration. Problems are printed
// one per line to stderr and reported as errSilent (exit 1).
func (a *app) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(a.projectsDir, a.envFile, a.env)
	var ps config.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(a.stderr, p.Error())
		}
		return nil, errSilent
	}
	return cfg, err
}
