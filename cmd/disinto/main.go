// Command disinto is the autonomous code factory: one binary for the daemon,
// one-shot agent runs, provisioning and operations.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/disinto/disinto/lib/logx"
)

// Exit codes: 0 ok, 1 runtime failure, 2 usage error.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// app carries what every command shares: output streams and the global
// flags. Commands receive it instead of reading globals.
type app struct {
	stdout io.Writer
	stderr io.Writer
	// env is the process environment as KEY=VALUE pairs.
	env []string

	projectsDir string
	envFile     string
	dataDir     string
	debug       bool
	// allowUnisolated accepts model sessions that run as the daemon's own
	// user when it cannot give them one of their own.
	allowUnisolated bool
}

// usageError marks errors caused by how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// silentError is returned by commands that already printed their problems
// and only need a non-zero exit.
var errSilent = errors.New("failed")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// run executes the CLI and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	a := &app{stdout: stdout, stderr: stderr, env: environ}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	switch {
	case errors.Is(err, errSilent):
		return exitFailure
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "disinto: %v\nRun 'disinto --help' for usage.\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "disinto: %v\n", err)
		return exitFailure
	}
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "disinto",
		Short:         "An autonomous code factory on a self-hosted Forgejo",
		Long:          "disinto watches projects on a Forgejo forge and runs agents that turn backlog issues into\nreviewed, merged pull requests.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	a.envFlag(pf, &a.projectsDir, "projects-dir", "DISINTO_PROJECTS_DIR", "projects", "directory of project *.toml files")
	a.envFlag(pf, &a.envFile, "env-file", "DISINTO_ENV_FILE", ".env", "environment file (process environment wins)")
	a.envFlag(pf, &a.dataDir, "data-dir", "DISINTO_DATA_DIR", "data", "data directory for state, logs and the run ledger")
	pf.BoolVar(&a.debug, "debug", false, "debug logging")
	pf.BoolVar(&a.allowUnisolated, "allow-unisolated-sessions", a.getenv("DISINTO_ALLOW_UNISOLATED_SESSIONS") == "1",
		"run model sessions as this user when not root (they can then read its credentials) (env DISINTO_ALLOW_UNISOLATED_SESSIONS=1)")

	root.AddCommand(
		a.versionCmd(),
		a.configCmd(),
		a.doctorCmd(),
		a.initCmd(),
		a.formulaCmd(),
		a.daemonCmd(),
		a.gatewayCmd(),
		a.runCmd(),
		a.statusCmd(),
		a.logsCmd(),
		a.ciLogsCmd(),
		a.agentCmd(),
		a.secretsCmd(),
		a.vaultCmd(),
		a.releaseCmd(),
		a.runnerJobCmd(),
		a.graphCmd(),
		a.chatCmd(),
		a.edgeCmd(),
	)
	root.Version = versionLine()
	root.SetVersionTemplate("disinto {{.Version}}\n")
	typedUsage(root)
	a.completions(root)
	return root
}

// getenv reads one variable of the process environment.
func (a *app) getenv(key string) string {
	for i := len(a.env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(a.env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// envFlag defines a string flag whose default is the environment
// variable env, else def, and says so in --help.
func (a *app) envFlag(fs *pflag.FlagSet, p *string, name, env, def, usage string) {
	fs.StringVar(p, name, a.envOr(env, def), usage+" (env "+env+")")
}

func (a *app) envOr(key, def string) string {
	if v := a.getenv(key); v != "" {
		return v
	}
	return def
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  disinto version\n  disinto --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "disinto %s\n", versionLine())
			return nil
		},
	}
}

// typedUsage makes every error of how a command was called a usageError,
// so that the exit code is decided by the error's type and never by its
// text: a wrong number of arguments (each command's Args check), an
// unknown subcommand, and a bad flag (the root's flag error function,
// which subcommands inherit).
func typedUsage(c *cobra.Command) {
	args := c.Args
	switch {
	case args == nil && c.HasSubCommands():
		args = unknownSubcommand
		if !c.Runnable() {
			// Only a runnable command has its arguments checked.
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	case args == nil:
		args = cobra.ArbitraryArgs
	}
	c.Args = func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
	for _, sub := range c.Commands() {
		typedUsage(sub)
	}
}

// unknownSubcommand is the argument check of a command that only groups
// subcommands: any argument left is a subcommand that does not exist.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, ", "))
	}
	return errors.New(msg)
}

// versionLine is the version with the commit and its date when the
// binary carries them (go build stamps them from git).
func versionLine() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("%s (commit %s%s, %s)", v, rev, dirty, at)
}

// logOptions are the console settings of the environment: DISINTO_LOG_LEVEL
// (debug, info, warn, error; --debug wins), DISINTO_LOG_FORMAT (console or
// json) and NO_COLOR (any value: no colours).
func (a *app) logOptions() (logx.Options, error) {
	o := logx.Options{Debug: a.debug, Level: a.getenv("DISINTO_LOG_LEVEL"), NoColor: a.getenv("NO_COLOR") != ""}
	if _, err := logx.ParseLevel(o.Level); err != nil {
		return o, fmt.Errorf("DISINTO_LOG_LEVEL: %w", err)
	}
	json, err := logx.ParseFormat(a.getenv("DISINTO_LOG_FORMAT"))
	if err != nil {
		return o, fmt.Errorf("DISINTO_LOG_FORMAT: %w", err)
	}
	o.JSONConsole = json
	return o, nil
}

// buildCommit is the commit the binary was built from, as go build
// stamps it from git, or "" when it carries none.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
