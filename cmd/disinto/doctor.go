package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/doctor"
	"github.com/disinto/disinto/lib/redact"
)

// doctorFlags are the settings of disinto doctor and disinto config check.
type doctorFlags struct {
	offline    bool
	json       bool
	webhookURL string
}

func (a *app) doctorCmd() *cobra.Command {
	f := doctorFlags{}
	cmd := &cobra.Command{
		Use:     "doctor",
		Short:   "Check everything the daemon needs, with the fix for each problem",
		Example: "  disinto doctor\n  disinto doctor --json\n  docker compose exec agents disinto doctor",
		Long: "Checks the configuration (every problem of every file), the env file and its mode, placeholder\n" +
			"secrets, the model credentials and the claude CLI, the status listener, the data directory, and\n" +
			"on the forge: its version, every bot token (whose it is and its scopes), each project's webhook\n" +
			"and branch protection. Prints one line per finding with its fix and exits 1 when any is\n" +
			"blocking (warnings alone exit 0). The daemon's container runs it before the daemon starts.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDoctor(cmd, f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the findings as JSON")
	a.envFlag(cmd.Flags(), &f.webhookURL, "webhook-url", "DISINTO_WEBHOOK_URL", "", "URL each project's webhook must call")
	return cmd
}

// runDoctor runs the checks, prints the findings on stdout and fails
// (exit 1, the count on stderr) when one is blocking.
func (a *app) runDoctor(cmd *cobra.Command, f doctorFlags) error {
	explicit := cmd.Flags().Changed("env-file") || a.getenv("DISINTO_ENV_FILE") != ""
	rep, err := doctor.Run(cmd.Context(), doctor.Options{
		ProjectsDir: a.projectsDir, EnvFile: a.envFile, EnvFileExplicit: explicit, Environ: a.env,
		DataDir: a.dataDir, Offline: f.offline, WebhookURL: f.webhookURL, AllowUnisolated: a.allowUnisolated,
	})
	if err != nil {
		return err
	}
	// No finding quotes a secret; the redactor makes sure of it.
	red := redact.New()
	if env, err := config.LoadEnvWith(a.envFile, a.envDecrypter(), a.env); err == nil {
		red.Add(env.Secrets()...)
	}
	out := red.Writer(a.stdout)
	if f.json {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	if err != nil {
		return err
	}
	if n := rep.Count(doctor.Blocking); n > 0 {
		// The reason on stderr, whatever stdout carries (lines or JSON).
		return fmt.Errorf("%d blocking problem(s), each printed with its fix", n)
	}
	return nil
}
