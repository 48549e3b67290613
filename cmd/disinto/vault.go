package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	agentvault "github.com/disinto/disinto/agents/vault"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/vault"
)

// cliVault resolves the vault parts of --project for a command.
func (a *app) cliVault(project string) (*agentvault.Parts, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	p, err := pickProject(cfg, project)
	if err != nil {
		return nil, err
	}
	red := redact.New(cfg.Secrets()...)
	return agentvault.For(agentvault.PartsOptions{Config: cfg, Project: p, Dir: a.layout().CLIOps(p.Name, daemon.VaultUser(cfg)),
		Admins: daemon.Maintainers(cfg.Env), Redactor: red, Log: zerolog.Nop()})
}

// pickProject returns the named project, or the only one.
func pickProject(cfg *config.Config, name string) (*config.Project, error) {
	if name != "" {
		if p := cfg.Project(name); p != nil {
			return p, nil
		}
		return nil, usageError{fmt.Errorf("unknown project %q (see disinto config check)", name)}
	}
	if len(cfg.Projects) == 1 {
		return cfg.Projects[0], nil
	}
	return nil, usageError{errors.New("several projects: name one with --project")}
}

func (a *app) vaultCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "vault",
		Example: "  disinto vault list\n  disinto vault approve-hint release-v1-2-0 --project widgets",
		Short:   "Vault actions: what agents asked to do outside, what waits for approval, what ran",
		Long: "An action is vault/actions/<id>.toml in the ops repository. Low-tier actions are committed by\n" +
			"the vault bot; others wait in the pull request \"vault: <id>\" for an administrator's approval.\n" +
			"The dispatcher runs each approved action once and commits its result to vault/results/<id>.toml.",
	}
	var project string
	cmd.PersistentFlags().StringVar(&project, "project", "", "project (default: the only one)")
	cmd.AddCommand(a.vaultListCmd(&project), a.vaultShowCmd(&project), a.vaultLintCmd(), a.vaultHintCmd(&project),
		a.vaultRequestCmd(&project), a.vaultDropCmd(&project), a.vaultRunCmd(&project))
	return cmd
}

// inspect returns the project's actions as the dispatcher sees them.
func (a *app) inspect(cmd *cobra.Command, project string) ([]vault.Entry, *agentvault.Parts, error) {
	v, err := a.cliVault(project)
	if err != nil {
		return nil, nil, err
	}
	d, err := v.Dispatcher(nil, "cli", nil, zerolog.Nop())
	if err != nil {
		return nil, nil, err
	}
	es, err := d.Inspect(cmd.Context())
	return es, v, err
}

func (a *app) vaultListCmd(project *string) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Example: "  disinto vault list --project widgets",
		Short:   "List the actions: pending (and why), ready, running, finished",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			es, _, err := a.inspect(cmd, *project)
			if err != nil {
				return err
			}
			printEntries(a.stdout, es)
			return nil
		},
	}
}

// printEntries prints one line per action.
func printEntries(w io.Writer, es []vault.Entry) {
	if len(es) == 0 {
		fmt.Fprintln(w, "no vault actions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIER\tSTATE\tDETAIL")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, cmp.Or(e.Tier.String(), "-"), e.Status(), firstLine(e.Detail()))
	}
	_ = tw.Flush()
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func (a *app) vaultShowCmd(project *string) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Example: "  disinto vault show release-v1-2-0",
		Short:   "Show one action: its file, where it stands, its result",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			es, _, err := a.inspect(cmd, *project)
			if err != nil {
				return err
			}
			for _, e := range es {
				if e.ID != args[0] {
					continue
				}
				fmt.Fprintf(a.stdout, "action %s (%s)\nstate: %s\n%s\n\n%s", e.ID, vault.ActionPath(e.ID), e.Status(),
					e.Detail(), e.Content())
				if e.Result != nil && e.Result.Report != "" {
					fmt.Fprintf(a.stdout, "\nreport: %s\n", e.Result.Report)
				}
				if e.Result != nil && e.Result.Logs != "" {
					fmt.Fprintf(a.stdout, "\nlogs (tail):\n%s\n", e.Result.Logs)
				}
				return nil
			}
			return fmt.Errorf("no vault action %q on the ops primary branch", args[0])
		},
	}
}

func (a *app) vaultDropCmd(project *string) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:     "drop ID [--reason TEXT]",
		Example: "  disinto vault drop mirror-github-0a1b2c3d4e5f --reason \"mirror retired\"",
		Short:   "Give up an action that has not run (a mirror push that keeps failing): recorded as dropped, never run",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := a.cliVault(*project)
			if err != nil {
				return err
			}
			d, err := v.Dispatcher(nil, "cli", nil, zerolog.Nop())
			if err != nil {
				return err
			}
			res, err := d.Drop(cmd.Context(), args[0], "an operator (disinto vault drop)", reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "dropped %s: %s records it; no dispatcher runs it\n", res.ID, vault.ResultPath(res.ID))
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, kept in the result record")
	return c
}

func (a *app) vaultRunCmd(project *string) *cobra.Command {
	return &cobra.Command{
		Use:     "run ID",
		Example: "  disinto vault run mirror-github-0a1b2c3d4e5f\n  disinto vault run release-widgets-v1-2-0 --project widgets",
		Short:   "Run an action that ran again: a new attempt (ID-r2, …), approved as the policy says, like any request",
		Long: "Files the action again under its next attempt's id as the vault bot: a low-tier one is committed and\n" +
			"the dispatcher runs it within a minute; any other waits in its own pull request for an administrator's\n" +
			"approval, as the first attempt did. Only an action with a recorded result runs again: one waiting\n" +
			"for approval is refused, and one approved and not run yet is left to the dispatcher.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			es, v, err := a.inspect(cmd, *project)
			if err != nil {
				return err
			}
			ids := map[string]bool{}
			var e *vault.Entry
			for i := range es {
				ids[es[i].ID] = true
				if es[i].ID == args[0] {
					e = &es[i]
				}
			}
			if e == nil {
				return fmt.Errorf("no vault action %q on the ops primary branch or in an open pull request", args[0])
			}
			act, err := vault.Rerun(*e, func(id string) bool { return ids[id] })
			if err != nil {
				return err
			}
			q, err := v.Requester(zerolog.Nop())
			if err != nil {
				return err
			}
			r, err := q.RequestAction(cmd.Context(), act)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: a new attempt of %s (%s), %s tier\n", r.ID, e.ID, e.Result.Status, r.Tier)
			if r.Mode == vault.ModePR {
				fmt.Fprintf(a.stdout, "pull request #%d %s\nnext: an administrator approves it at its head and merges it; see disinto vault approve-hint %s\n", r.PR, r.URL, r.ID)
			} else {
				fmt.Fprintln(a.stdout, "committed directly (low tier by the ops policy); the dispatcher runs it within a minute")
			}
			return nil
		},
	}
}

func (a *app) vaultLintCmd() *cobra.Command {
	var policy string
	c := &cobra.Command{
		Use:     "lint FILE... [--policy vault/policy.toml]",
		Example: "  disinto vault lint vault/actions/*.toml --policy vault/policy.toml",
		Short:   "Validate action files as the dispatcher will (one line per problem, exit 1 when any)",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			pol := vault.DefaultPolicy()
			if policy != "" {
				data, err := os.ReadFile(policy)
				if err != nil {
					return err
				}
				if pol, err = vault.ParsePolicy(policy, data); err != nil {
					return err
				}
			}
			v := vault.Validator{Formulas: formulas.FS, Policy: pol}
			bad := false
			for _, f := range args {
				data, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				act, err := v.Parse(f, data)
				if err != nil {
					fmt.Fprintln(a.stderr, err)
					bad = true
					continue
				}
				fmt.Fprintf(a.stdout, "ok: %s (formula %s, %s tier, secrets %v)\n", f, act.Formula, pol.Classify(act), act.Secrets)
			}
			if bad {
				return errSilent
			}
			return nil
		},
	}
	c.Flags().StringVar(&policy, "policy", "", "the policy file to classify with (default: every formula high)")
	return c
}

func (a *app) vaultHintCmd(project *string) *cobra.Command {
	return &cobra.Command{
		Use:     "approve-hint ID",
		Example: "  disinto vault approve-hint release-v1-2-0",
		Short:   "Say what an administrator must do for a pending action to run",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			es, v, err := a.inspect(cmd, *project)
			if err != nil {
				return err
			}
			id := args[0]
			for _, e := range es {
				if e.ID == id {
					fmt.Fprintf(a.stdout, "%s is %s: %s\n", id, e.Status(), e.Detail())
					if e.State != vault.StatePending {
						return nil
					}
				}
			}
			pr, err := v.Forge.FindPullByHead(cmd.Context(), vault.BranchPrefix+id)
			if errors.Is(err, forge.ErrNotFound) {
				fmt.Fprintf(a.stdout, "no pull request from %s%s on %s\n", vault.BranchPrefix, id, v.Project.OpsRepo)
				return nil
			}
			if err != nil {
				return err
			}
			who := "an administrator of " + v.Project.OpsRepo
			if admins := v.Admins(); len(admins) > 0 {
				who = strings.Join(admins, " or ")
			}
			fmt.Fprintf(a.stdout, "pull request #%d (%s), state %s\n", pr.Number, pr.URL, pr.State)
			fmt.Fprintf(a.stdout, "to run it: %s approves it at its head %s (Files changed, Review, Approve), then merges it.\n",
				who, pr.HeadSHA)
			fmt.Fprintln(a.stdout, "an approval of an earlier head, by a bot or by its author does not count.")
			return nil
		},
	}
}

func (a *app) vaultRequestCmd(project *string) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:     "request --file ACTION.toml",
		Example: "  disinto vault request --file release-v1-2-0.toml --project widgets",
		Short:   "File a vault action: low tier commits it, others open the pull request \"vault: <id>\"",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{errors.New("--file is required")}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			v, err := a.cliVault(*project)
			if err != nil {
				return err
			}
			q, err := v.Requester(zerolog.Nop())
			if err != nil {
				return err
			}
			r, err := q.Request(cmd.Context(), data)
			if err != nil {
				return err
			}
			switch r.Mode {
			case vault.ModePR:
				fmt.Fprintf(a.stdout, "%s: %s tier, pull request #%d %s\n", r.ID, r.Tier, r.PR, r.URL)
			default:
				fmt.Fprintf(a.stdout, "%s: %s tier, committed %s\n", r.ID, r.Tier, cmp.Or(r.Commit, "-"))
			}
			return nil
		},
	}
	c.Flags().StringVar(&file, "file", "", "the action file")
	return c
}
