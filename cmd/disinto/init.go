package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/provision"
	"github.com/disinto/disinto/lib/redact"
)

// initFlags are the values of disinto init's flags.
type initFlags struct {
	forgeURL, adminUser, adminPass, adminToken string
	bootstrapTokenFile                         string
	repo, source, branch, webhookURL           string
	yes, rotate                                bool
	waitForge                                  time.Duration
	localBots                                  []string
	// chatURL is the edge's public URL, for the chat's OAuth2 application.
	chatURL string
}

// prompter asks the operator for a missing value. Nil means
// non-interactive.
type prompter interface {
	Ask(label string, secret bool) (string, error)
}

func (a *app) initCmd() *cobra.Command {
	f := &initFlags{}
	cmd := &cobra.Command{
		Use:     "init [OWNER/NAME | URL]",
		Short:   "Provision a forge for a project (idempotent)",
		Example: "  disinto init acme/widgets\n  disinto init https://forge.example.com/acme/widgets --branch main",
		Long: "Creates the bot users and their tokens, the owner, the project and ops repositories, the bots'\n" +
			".profile repositories, collaborators, labels, branch protection and the project webhook; writes\n" +
			"the credentials to the env file (mode 0600) and projects/<name>.toml. Running it again changes\n" +
			"nothing that is in place and reports it as already present.\n\n" +
			"FORGE_URL, FORGE_ADMIN_USER, FORGE_ADMIN_PASS and FORGE_ADMIN_TOKEN in the environment (or the\n" +
			"env file) stand in for the flags; prefer them to --admin-password, which other users can see.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if f.repo != "" {
					return usageError{errors.New("give the repository either as an argument or with --repo, not both")}
				}
				f.repo = args[0]
			}
			var ask prompter
			if !f.yes && isTerminal(os.Stdin) {
				ask = &termPrompter{in: bufio.NewReader(os.Stdin), out: a.stderr, fd: int(os.Stdin.Fd())}
			}
			return a.runInit(cmd, f, ask)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.forgeURL, "forge-url", "", "forge base URL (env FORGE_URL)")
	fl.StringVar(&f.adminUser, "admin-user", "", "site admin login (env FORGE_ADMIN_USER)")
	fl.StringVar(&f.adminPass, "admin-password", "", "site admin password (env FORGE_ADMIN_PASS)")
	fl.StringVar(&f.adminToken, "admin-token", "", "site admin API token instead of the password (env FORGE_ADMIN_TOKEN)")
	fl.StringVar(&f.bootstrapTokenFile, "bootstrap-token-file", "", "file that may hold a one-time admin token (minted with the forge's CLI) used to set the admin password, then revoked")
	fl.StringVar(&f.repo, "repo", "", "project repository OWNER/NAME (or its URL)")
	fl.StringVar(&f.source, "source", "", "git URL or path of existing code to push into the project repository while it is empty")
	fl.StringVar(&f.branch, "branch", "", "primary branch (default: the repository's, else the source's HEAD, else main)")
	fl.StringVar(&f.webhookURL, "webhook-url", "", "daemon webhook URL to register, e.g. http://agents:8080/hooks/forgejo")
	fl.StringVar(&f.chatURL, "chat-url", "", "the edge's public URL (e.g. http://localhost): makes the chat's OAuth2 application with its callback there")
	fl.BoolVar(&f.yes, "yes", false, "never prompt; missing values are errors")
	fl.StringArrayVar(&f.localBots, "local-bot", nil, "NAME=LOGIN of a local-model dev agent to provision (FORGE_TOKEN_<NAME>); repeatable")
	fl.DurationVar(&f.waitForge, "wait-forge", time.Minute, "how long to wait for a forge that does not answer yet")
	fl.BoolVar(&f.rotate, "rotate-tokens", false, "replace every bot password and token and the webhook secret")
	return cmd
}

// runInit resolves the settings, provisions and prints the report.
func (a *app) runInit(cmd *cobra.Command, f *initFlags, ask prompter) error {
	fileEnv, err := config.ReadEnvFile(a.envFile)
	if err != nil {
		return err
	}
	fromEnv := func(dst *string, keys ...string) {
		for _, k := range keys {
			if *dst != "" {
				return
			}
			if v := a.getenv(k); v != "" {
				*dst = v
			} else {
				*dst = fileEnv[k]
			}
		}
	}
	fromEnv(&f.forgeURL, "FORGE_URL")
	fromEnv(&f.adminUser, "FORGE_ADMIN_USER")
	if f.adminToken == "" {
		fromEnv(&f.adminPass, "FORGE_ADMIN_PASS")
	}
	if f.adminPass == "" {
		fromEnv(&f.adminToken, "FORGE_ADMIN_TOKEN")
	}
	if err := f.complete(ask); err != nil {
		return err
	}
	slug, err := parseSlug(f.repo)
	if err != nil {
		return usageError{err}
	}

	// DISINTO_LOCAL_BOTS ("llama=dev-qwen,...") adds local-model bots
	// without flags, for the compose provisioning service.
	var fromList string
	fromEnv(&fromList, "DISINTO_LOCAL_BOTS")
	localBots := append(append([]string(nil), f.localBots...), strings.FieldsFunc(fromList, func(r rune) bool { return r == ',' || r == ' ' })...)
	var locals []provision.LocalBot
	for _, lb := range localBots {
		name, login, ok := strings.Cut(lb, "=")
		if !ok || !localRE.MatchString(name) || !localRE.MatchString(login) {
			return usageError{fmt.Errorf("init: --local-bot %q: want NAME=LOGIN", lb)}
		}
		locals = append(locals, provision.LocalBot{Name: name, Login: login})
	}

	red := redact.New(f.adminPass, f.adminToken)
	for k, v := range fileEnv {
		if config.IsSecretName(k) {
			red.Add(v)
		}
	}
	stdout, stderr := red.Writer(a.stdout), red.Writer(a.stderr)
	level := zerolog.InfoLevel
	if a.debug {
		level = zerolog.DebugLevel
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(level).With().Timestamp().Logger()

	rep, err := provision.Run(cmd.Context(), provision.Options{
		ForgeURL: strings.TrimSuffix(f.forgeURL, "/"), AdminUser: f.adminUser, AdminPassword: f.adminPass, AdminToken: f.adminToken,
		BootstrapTokenFile: f.bootstrapTokenFile,
		Repo:               slug, Source: f.source, Branch: f.branch, ProjectsDir: a.projectsDir, EnvFile: a.envFile,
		WebhookURL: f.webhookURL, ChatURL: f.chatURL, LocalBots: locals, RotateTokens: f.rotate, WaitForge: f.waitForge, Logger: log,
		OnSecret: func(s string) { red.Add(s) },
		// One line per step as it starts, on stderr beside the log: a
		// forge that is slow to answer shows where init waits.
		Progress: func(step string, n, total int) { fmt.Fprintf(stderr, "disinto init: [%d/%d] %s\n", n, total, step) },
	})
	if len(rep.Items) > 0 {
		if werr := rep.WriteTable(stdout); werr != nil {
			return werr
		}
	}
	if err != nil {
		return fmt.Errorf("init: %s", red.Error(err))
	}
	if rep.Changed() {
		fmt.Fprintf(stdout, "disinto init: done; credentials in %s, project in %s\n", a.envFile, a.projectsDir)
	} else {
		fmt.Fprintln(stdout, "disinto init: everything already present, nothing changed")
	}
	return nil
}

// complete fills missing required values by prompting, or fails with a
// usage error naming the flag.
func (f *initFlags) complete(ask prompter) error {
	need := []struct {
		dst    *string
		flag   string
		label  string
		secret bool
		skip   bool
	}{
		{&f.forgeURL, "--forge-url", "Forge URL", false, false},
		{&f.adminUser, "--admin-user", "Forge admin user", false, f.adminToken != ""},
		{&f.adminPass, "--admin-password", "Forge admin password", true, f.adminToken != ""},
		{&f.repo, "--repo", "Project repository (owner/name)", false, false},
	}
	for _, n := range need {
		if *n.dst != "" || n.skip {
			continue
		}
		if ask == nil {
			hint := ""
			if n.flag == "--admin-password" {
				hint = " (or FORGE_ADMIN_PASS in .env, or --admin-token)"
			}
			return usageError{fmt.Errorf("init: missing %s%s", n.flag, hint)}
		}
		v, err := ask.Ask(n.label, n.secret)
		if err != nil {
			return err
		}
		if v == "" {
			return usageError{fmt.Errorf("init: missing %s", n.flag)}
		}
		*n.dst = v
	}
	return nil
}

var (
	slugRE   = regexp.MustCompile(`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$`)
	schemeRE = regexp.MustCompile(`^[a-z]+://`)
	localRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// parseSlug accepts owner/name or an http(s) URL of the repository.
func parseSlug(s string) (string, error) {
	orig := s
	if strings.HasPrefix(s, "git@") {
		return "", fmt.Errorf("repository %q: SSH URLs are not supported; give OWNER/NAME", orig)
	}
	if schemeRE.MatchString(s) {
		s = schemeRE.ReplaceAllString(s, "")
		if parts := strings.Split(strings.Trim(s, "/"), "/"); len(parts) >= 3 {
			s = strings.Join(parts[len(parts)-2:], "/")
		}
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	if !slugRE.MatchString(s) {
		return "", fmt.Errorf("repository %q: want OWNER/NAME or its http(s) URL", orig)
	}
	return s, nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// termPrompter asks on a terminal; secrets are read with echo off.
type termPrompter struct {
	in  *bufio.Reader
	out io.Writer
	fd  int
}

// Ask prints label and reads one line.
func (p *termPrompter) Ask(label string, secret bool) (string, error) {
	fmt.Fprintf(p.out, "%s: ", label)
	if secret && p.in.Buffered() == 0 {
		// Echo off while the secret is typed.
		b, err := term.ReadPassword(p.fd)
		fmt.Fprintln(p.out)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", strings.ToLower(label), err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := p.in.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("read %s: %w", strings.ToLower(label), err)
	}
	return strings.TrimSpace(line), nil
}
