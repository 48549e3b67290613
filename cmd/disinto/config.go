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
		Example: "  disinto config check\n  disinto config show",
	}
	var asJSON bool
	check := &cobra.Command{
		Use:     "check",
		Short:   "Validate project files and the environment, offline",
		Example: "  disinto config check\n  disinto config check --projects-dir ./projects --env-file .env --json",
		Long: "The offline part of disinto doctor: every projects/*.toml and the environment (the env file\n" +
			"overlaid by the process environment), the env file's mode, placeholder secrets, the model\n" +
			"credentials, the status listener and the data directory. Prints one line per finding with its\n" +
			"fix (every problem of every file in one run) and exits 1 when any is blocking.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDoctor(cmd, doctorFlags{offline: true, json: asJSON})
		},
	}
	check.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.AddCommand(check, a.configShowCmd())
	return cmd
}

// loadConfig loads and validates the configuration. Problems are printed
// one per line to stderr and reported as errSilent (exit 1).
func (a *app) loadConfig() (*config.Config, error) {
	cfg, err := config.LoadWith(a.projectsDir, a.envFile, a.env, a.envDecrypter())
	var ps config.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(a.stderr, p.Error())
		}
		return nil, errSilent
	}
	return cfg, err
}
