package main

import (
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
)

// envSecretsDir is where the runner put the job's secret files (lib/runner
// sets it; runner.SecretsDir when unset).
const envSecretsDir = "DISINTO_SECRETS_DIR"

// runnerJobCmd groups the mechanical jobs the runner image runs with its
// own disinto binary (release.JobCommand). Hidden: nobody runs them by
// hand; the vault runner starts them in the action's container.
func (a *app) runnerJobCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "runner-job",
		Short:  "Run a vault action's mechanical job inside the runner container",
		Hidden: true,
	}
	c.AddCommand(&cobra.Command{
		Use:     "release",
		Example: "  " + release.JobCommand + "   # in the runner container, as the job's script runs it",
		Short:   "Tag the release's commit on the forge and push the tag to the mirrors",
		Long: "Reads the release job's RELEASE_* environment and its tokens from the secret files, tags the\n" +
			"commit through the forge API unless the tag is already on it (a tag elsewhere fails the release),\n" +
			"pushes the tag to every mirror with a token, and prints the " + release.ResultMarker + "line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := release.ReadInputs(a.getenv, a.envOr(envSecretsDir, runner.SecretsDir))
			if err != nil {
				return err
			}
			if !release.Execute(cmd.Context(), in, release.ExecOptions{Out: a.stdout}).Succeeded() {
				return errSilent // the result line says why
			}
			return nil
		},
	})
	return c
}
