package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/redact"
)

// ciLogsTimeout bounds disinto ci-logs: the forge's answers and the
// log sources'.
const ciLogsTimeout = 3 * time.Minute

// shaArg is a commit id as the command takes one: 7 to 40 hex digits.
var shaArg = regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`)

func (a *app) ciLogsCmd() *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "ci-logs --project P PR|SHA",
		Short: "Print what the dev agent is given about the CI of a head: the statuses, the log's source, job and tail",
		Long: "Reads the combined CI status of a head (a pull request's, by its number, or a commit's, by its\n" +
			"id) and prints what the dev agent gives the session that fixes a red head, read the way the\n" +
			"agent reads it (as the dev bot, from Woodpecker's API or the forge's Actions job logs), with the\n" +
			"same byte budget and secrets masked. A head that is not red gets nothing from the agent; the\n" +
			"command says so. A number of fewer than 7 digits (or #N) is a pull request.",
		Example: "  disinto ci-logs --project widgets 42\n  disinto ci-logs --project widgets 3f2c9a1e",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if project == "" {
				return usageError{errors.New("--project is required")}
			}
			pr, sha, err := parseHeadArg(args[0])
			if err != nil {
				return usageError{err}
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			p := cfg.Project(project)
			if p == nil {
				return usageError{fmt.Errorf("unknown project %q (see disinto config check)", project)}
			}
			if p.CI.System == config.CINone {
				return fmt.Errorf("project %s has no CI (ci.system = %q in %s): the dev agent reads no CI status or log",
					p.Name, config.CINone, p.File)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), ciLogsTimeout)
			defer cancel()
			return a.printCILogs(ctx, cfg, p, pr, sha)
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project name (required)")
	return cmd
}

// parseHeadArg reads the head argument: a pull request number (fewer
// than 7 digits, or #N) or a commit id.
func parseHeadArg(s string) (pr int64, sha string, err error) {
	if n, ok := strings.CutPrefix(s, "#"); ok || (len(s) < 7 && s != "") {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v <= 0 {
			return 0, "", fmt.Errorf("%q is neither a pull request number nor a commit id (7 to 40 hex digits)", s)
		}
		return v, "", nil
	}
	if !shaArg.MatchString(s) {
		return 0, "", fmt.Errorf("%q is neither a pull request number nor a commit id (7 to 40 hex digits)", s)
	}
	return 0, strings.ToLower(s), nil
}

// printCILogs reads the head's statuses and log as p's dev agent does
// and prints them.
func (a *app) printCILogs(ctx context.Context, cfg *config.Config, p *config.Project, pr int64, sha string) error {
	if err := forge.Answers(ctx, p.ForgeURL, cfg.Policy.ForgeTimeout); err != nil {
		return err
	}
	red := redact.New(cfg.Secrets()...)
	bot, err := cfg.Bot(config.RoleDev)
	if err != nil {
		return err
	}
	owner, name, _ := strings.Cut(p.Repo, "/")
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: bot.Token, User: bot.User, Redactor: red,
		HTTPClient: &http.Client{Timeout: cfg.Policy.ForgeTimeout, Transport: forge.NewBreaker(nil, forge.OneShotSilence)}})
	if err != nil {
		return err
	}
	repo := fc.Repo(owner, name)
	var head string
	if pr == 0 {
		// A short id is read as the agent never reads one: in full.
		c, err := repo.GetCommit(ctx, sha)
		if errors.Is(err, forge.ErrNotFound) {
			return fmt.Errorf("commit %s not found in %s", sha, p.Repo)
		}
		if err != nil {
			return err
		}
		sha = c.SHA
		head = "commit " + sha
	} else {
		pull, err := repo.GetPull(ctx, pr)
		if errors.Is(err, forge.ErrNotFound) {
			return fmt.Errorf("pull request #%d not found in %s", pr, p.Repo)
		}
		if err != nil {
			return err
		}
		sha = pull.HeadSHA
		head = fmt.Sprintf("pull request #%d, head %s", pr, sha)
	}
	cs, err := repo.CombinedStatus(ctx, sha)
	if err != nil {
		return err
	}
	state := cs.State
	if state == "" {
		state = "no status"
	}
	fmt.Fprintf(a.stdout, "%s (%s)\nCI: %s (ci.system = %q)\n", head, p.Repo, state, p.CI.System)
	switch cs.State {
	case "", forge.CIPending, forge.CISuccess:
		fmt.Fprintln(a.stdout, "The head is not red: the dev agent gives the session no CI report for it.")
		return nil
	}
	logs, err := ciLogSource(cfg, p, repo)
	if err != nil {
		return err
	}
	f, logErr := dev.ReadCIFailure(ctx, logs, cs)
	if f.Log.Found() {
		fmt.Fprintf(a.stdout, "Log: %s, %s", f.Log.Source, red.String(f.Log.Job))
		if f.Log.URL != "" {
			fmt.Fprintf(a.stdout, " (%s)", red.String(f.Log.URL))
		}
		fmt.Fprintf(a.stdout, ", %d bytes", len(f.Log.Text))
		if f.Log.Cut {
			fmt.Fprintf(a.stdout, ", head cut to the budget of %d", budgetOf(p))
		}
		fmt.Fprintln(a.stdout)
	} else {
		fmt.Fprintln(a.stdout, "Log: none found; the session gets the statuses only")
	}
	if logErr != nil {
		fmt.Fprintf(a.stdout, "Log source failed: %s\n", red.Error(logErr))
	}
	fmt.Fprintf(a.stdout, "--- the session is given:\n%s", red.String(f.Report()))
	return nil
}

// budgetOf is the log byte budget of p's dev agent.
func budgetOf(p *config.Project) int {
	if p.Limits.CILogBytes > 0 {
		return p.Limits.CILogBytes
	}
	return cilog.DefaultBudget
}
