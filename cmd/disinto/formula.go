package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/formula"
)

func (a *app) formulaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "formula",
		Short:   "Check and preview formulas",
		Example: "  disinto formula lint formulas/*.toml\n  disinto formula render dev --project widgets",
	}
	cmd.AddCommand(a.formulaLintCmd(), a.formulaRenderCmd())
	return cmd
}

func (a *app) formulaLintCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "lint [file.toml...]",
		Short:   "Validate formula files",
		Example: "  disinto formula lint formulas/*.toml",
		Long: "Validates the given formula files, or every formula shipped in the binary when none are\n" +
			"given. Prints one line per problem as file:line: field: message and exits 1 when there are any.",
		RunE: func(cmd *cobra.Command, files []string) error {
			var problems []*formula.Error
			n := 0
			if len(files) == 0 {
				all, err := formula.LoadAll(formulas.FS)
				if err != nil && formula.Problems(err) == nil {
					return err
				}
				n = len(all)
				problems = formula.Problems(err)
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("read formula: %w", err)
				}
				if _, err := formula.Parse(f, data); err != nil {
					problems = append(problems, formula.Problems(err)...)
					continue
				}
				n++
			}
			for _, p := range problems {
				fmt.Fprintln(a.stderr, p.Error())
			}
			if len(problems) > 0 {
				return errSilent
			}
			fmt.Fprintf(a.stdout, "ok: %d formula(s)\n", n)
			return nil
		},
	}
}

// renderOpts are the flags of `formula render`.
type renderOpts struct {
	project    string
	vars       []string
	file       string
	role       string
	profileDir string
	opsDir     string
	repoDir    string
}

func (a *app) formulaRenderCmd() *cobra.Command {
	var o renderOpts
	cmd := &cobra.Command{
		Use:     "render <name>",
		Short:   "Print the prompt a formula renders to",
		Example: "  disinto formula render dev --project widgets\n  disinto formula render review-pr --project widgets --profile-dir ../dev-bot-profile",
		Long: "Resolves the formula the way an agent does (the .profile override, the ops repository's\n" +
			"formulas/<name>.toml, then the shipped default), renders it with the project's context files\n" +
			"and the given variables, and prints the prompt. Token values are never printed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.renderFormula(args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.project, "project", "", "project whose repositories, forge and branch fill the prompt")
	f.StringArrayVar(&o.vars, "var", nil, "variable value as name=value (repeatable)")
	f.StringVar(&o.file, "file", "", "render this formula file instead of resolving <name>")
	f.StringVar(&o.role, "role", "", "agent role for the role line (default: derived from the name)")
	f.StringVar(&o.profileDir, "profile-dir", "", "checkout of the agent's .profile repository")
	f.StringVar(&o.opsDir, "ops-dir", "", "checkout of the ops repository (default: the project's)")
	f.StringVar(&o.repoDir, "repo-dir", "", "checkout of the project repository (default: the project's)")
	return cmd
}

func (a *app) renderFormula(name string, o renderOpts) error {
	vars := map[string]string{}
	for _, kv := range o.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError{fmt.Errorf("--var %q: want name=value", kv)}
		}
		vars[k] = v
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: a.stderr, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}})
	in := formula.RenderInput{Role: o.role, Vars: vars, StrictVars: true, TokenEnv: "FORGE_TOKEN", Logger: log}
	if in.Role == "" {
		in.Role = roleOf(name)
	}
	repoDir, opsDir := o.repoDir, o.opsDir
	if o.project != "" {
		cfg, err := a.loadConfig()
		if err != nil {
			return err
		}
		p := cfg.Project(o.project)
		if p == nil {
			return usageError{fmt.Errorf("no project %q in %s", o.project, a.projectsDir)}
		}
		in.Project, in.Repo, in.PrimaryBranch = p.Name, p.Repo, p.PrimaryBranch
		in.ForgeAPI = p.ForgeURL + "/api/v1/repos/" + p.Repo
		if repoDir == "" {
			repoDir = p.RepoRoot
		}
		if opsDir == "" {
			opsDir = p.OpsRepoRoot
		}
	}
	if repoDir != "" {
		in.RepoFS = os.DirFS(repoDir)
		in.Env = append(in.Env, formula.EnvVar{Name: "PROJECT_REPO_ROOT", Value: repoDir})
	}
	if opsDir != "" {
		in.OpsFS = os.DirFS(opsDir)
		in.Env = append(in.Env, formula.EnvVar{Name: "OPS_REPO_ROOT", Value: opsDir})
	}
	a.exampleProtocol(name, &in)

	var f *formula.Formula
	var err error
	if o.file != "" {
		var data []byte
		if data, err = os.ReadFile(o.file); err != nil {
			return fmt.Errorf("read formula: %w", err)
		}
		f, err = formula.Parse(o.file, data)
	} else {
		r := formula.Resolver{Embedded: formulas.FS, ProfileDir: o.profileDir, OpsDir: opsDir, Logger: log}
		f, _, err = r.Resolve(name)
	}
	if err == nil {
		var out string
		if out, err = formula.Render(f, in); err == nil {
			fmt.Fprint(a.stdout, out)
			return nil
		}
	}
	if errors.Is(err, formula.ErrNotFound) {
		return usageError{fmt.Errorf("no formula %q (shipped: %s)", name, shippedNames())}
	}
	if ps := formula.Problems(err); ps != nil {
		for _, p := range ps {
			fmt.Fprintln(a.stderr, p.Error())
		}
		return errSilent
	}
	return err
}

// exampleProtocol fills the contract files the way the orchestrators lay
// them out under the data directory, so the preview shows real paths.
func (a *app) exampleProtocol(name string, in *formula.RenderInput) {
	project := in.Project
	if project == "" {
		project = "<project>"
	}
	l := a.layout()
	switch name {
	case "dev":
		dir := l.Issue(project, orDefault(in.Vars["issue"], "<N>"))
		in.Protocols = []formula.Protocol{formula.ProtocolPhase, formula.ProtocolResult}
		in.PhaseFile = filepath.Join(dir, "phase")
		in.ResultFile = filepath.Join(dir, "result.json")
		in.Branch = "fix/issue-" + orDefault(in.Vars["issue"], "<N>")
		in.PrimaryBranch = orDefault(in.PrimaryBranch, "main")
	case "review-pr":
		in.Protocols = []formula.Protocol{formula.ProtocolReview}
		in.ReviewFile = filepath.Join(l.PullRequest(project, orDefault(in.Vars["pr"], "<N>")), "review.json")
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// roleOf maps a formula name to the agent that runs it.
func roleOf(name string) string {
	switch {
	case name == "review-pr":
		return "review"
	case name == "release":
		return "vault"
	case strings.HasPrefix(name, "run-"):
		return strings.TrimPrefix(name, "run-")
	}
	return name
}

func shippedNames() string {
	names, _ := fs.Glob(formulas.FS, "*.toml")
	for i, n := range names {
		names[i] = strings.TrimSuffix(n, ".toml")
	}
	return strings.Join(names, ", ")
}
