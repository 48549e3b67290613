package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
)

// graphTimeout bounds a graph command: the forge's listings and the ops
// clone.
const graphTimeout = 3 * time.Minute

// graphFlags are the flags of disinto graph.
type graphFlags struct {
	project string
	asJSON  bool
	changed []string
	depth   int
}

func (a *app) graphCmd() *cobra.Command {
	var f graphFlags
	cmd := &cobra.Command{
		Use:   "graph --project P [--json] [--changed FILE]...",
		Short: "Print the project's structural graph report: cycles, orphans, thin objectives, bottlenecks",
		Long: "Builds the graph of the prerequisite tree and evidence (from the ops repository: the daemon's\n" +
			"checkout under the data dir when there is one, else a read-only clone), the issues, open and\n" +
			"closed, the labels, the agents and the formulas, and prints its report. With --changed, the\n" +
			"report also has the objectives and prerequisites those files reach.",
		Example: "  disinto graph --project widgets\n  disinto graph --project widgets --json\n" +
			"  disinto graph --project widgets --changed formulas/run-planner.toml --changed docker-compose.yml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.project == "" {
				return usageError{errors.New("--project is required")}
			}
			if f.depth < 0 {
				return usageError{fmt.Errorf("--depth %d: must be 0 (the default) or more", f.depth)}
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			p := cfg.Project(f.project)
			if p == nil {
				return usageError{fmt.Errorf("unknown project %q (see disinto config check)", f.project)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), graphTimeout)
			defer cancel()
			rep, err := a.graphReport(ctx, cfg, p, f)
			if err != nil {
				return err
			}
			if f.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return rep.WriteText(a.stdout)
		},
	}
	cmd.Flags().StringVar(&f.project, "project", "", "project name (required)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	cmd.Flags().StringArrayVar(&f.changed, "changed", nil, "a changed file (repeatable): report what it affects")
	cmd.Flags().IntVar(&f.depth, "depth", 0, "how many edges a change travels (0: the default)")
	return cmd
}

// graphReport builds p's graph as the planner's bot and reports on it.
func (a *app) graphReport(ctx context.Context, cfg *config.Config, p *config.Project, f graphFlags) (graph.Report, error) {
	// Every listing retries a forge that is down: ask once, bounded, first.
	if err := forge.Answers(ctx, p.ForgeURL, cfg.Policy.ForgeTimeout); err != nil {
		return graph.Report{}, err
	}
	red := redact.New(cfg.Secrets()...)
	bot, err := cfg.Bot(config.RolePlanner)
	if err != nil {
		return graph.Report{}, err
	}
	owner, name, _ := strings.Cut(p.Repo, "/")
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: bot.Token, User: bot.User, Redactor: red,
		HTTPClient: &http.Client{Timeout: cfg.Policy.ForgeTimeout, Transport: forge.NewBreaker(nil, forge.OneShotSilence)}})
	if err != nil {
		return graph.Report{}, err
	}
	repo := fc.Repo(owner, name)
	// The ops checkout is read as the daemon's is made: as the dev bot.
	opsBot, err := cfg.Bot(config.RoleDev)
	if err != nil {
		return graph.Report{}, err
	}
	opsFiles, cleanup, opsErr := a.graphOps(ctx, p, opsBot, red)
	defer cleanup()
	fms, err := embeddedFormulas()
	if err != nil {
		return graph.Report{}, err
	}
	built, err := graph.Build(ctx, graph.Options{Forge: repo, Ops: opsFiles, Project: graph.RepoFiles(ctx, repo, p.PrimaryBranch),
		Agents: roleNames(), Formulas: fms, Log: zerolog.Nop()})
	if err != nil {
		return graph.Report{}, err
	}
	if opsErr != nil {
		built.Sources.Errors = append(built.Sources.Errors, "ops "+p.OpsRepo+": "+opsErr.Error())
	}
	// What the forge and git said is shown: mask every secret in it.
	built.Sources.ForgeError = red.String(built.Sources.ForgeError)
	for i, e := range built.Sources.Errors {
		built.Sources.Errors[i] = red.String(e)
	}
	return built.Report(graph.ReportOptions{Bottlenecks: true, Changed: f.changed, Depth: f.depth}), nil
}

// graphOps returns p's ops repository: the daemon's checkout as it last
// fetched it, else the configured ops_repo_root directory, else a clone
// made for this command and removed by cleanup. Nothing is written to
// the ops repository. Files is nil, with the reason, when there is none.
func (a *app) graphOps(ctx context.Context, p *config.Project, bot config.Bot, red *redact.Redactor) (_ graph.Files, cleanup func(), _ error) {
	cleanup = func() {}
	if p.OpsRepo == "" {
		if p.OpsRepoRoot != "" {
			return graph.DirFiles(p.OpsRepoRoot), cleanup, nil
		}
		return nil, cleanup, errors.New("the project has no ops repository")
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: bot.User, Password: bot.Password}, Redactor: red})
	daemonDir := a.layout().Ops(p.Name, bot.User)
	if _, err := os.Stat(filepath.Join(daemonDir, ".git")); err == nil {
		r := g.Open(daemonDir)
		if head, err := r.RefSHA(ctx, "refs/remotes/"+git.Remote+"/main"); err == nil && head != "" {
			return graph.GitFiles(ctx, r, head), cleanup, nil
		}
	}
	if p.OpsRepoRoot != "" {
		return graph.DirFiles(p.OpsRepoRoot), cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "disinto-graph-ops-")
	if err != nil {
		return nil, cleanup, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	name, email := git.Identity(bot.User)
	r := ops.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git", Dir: filepath.Join(tmp, "ops"), Name: name, Email: email})
	if _, err := r.Sync(ctx); err != nil {
		return nil, cleanup, err
	}
	files, head, err := r.Local(ctx)
	if err != nil || head == "" {
		return nil, cleanup, err // an empty ops repository has nothing to read
	}
	return graph.OpsFiles(files), cleanup, nil
}

// embeddedFormulas returns the formulas shipped with the binary, by name
// (the file's stem).
func embeddedFormulas() (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(formulas.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".toml" {
			return err
		}
		data, err := fs.ReadFile(formulas.FS, path)
		if err != nil {
			return err
		}
		out[strings.TrimSuffix(filepath.Base(path), ".toml")] = string(data)
		return nil
	})
	return out, err
}

// graphReviewTimeout bounds the graph built for one review prompt.
const graphReviewTimeout = time.Minute

// graphReviewTTL is how long a graph built for reviews is reused while
// the ops checkout has not moved: reviews of several pull requests in one
// tick list the issues once.
const graphReviewTTL = 5 * time.Minute

// graphObjectives returns, for the review prompt, what p's structural
// graph says a change to files affects: the graph is built from the
// daemon's ops checkout as last fetched and the tracker as repo reads
// it. "" without an ops checkout, or when the change reaches nothing.
func graphObjectives(opsOf func(project string) *ops.Repo, p *config.Project, repo *forge.RepoClient, log zerolog.Logger) func(context.Context, []string) string {
	var (
		mu    sync.Mutex
		built *graph.Built
		head  string
		at    time.Time
	)
	return func(ctx context.Context, files []string) string {
		r := opsOf(p.Name)
		if r == nil || len(files) == 0 {
			return ""
		}
		ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
		defer cancel()
		opsFiles, now, err := r.Local(ctx)
		if err != nil || now == "" {
			return ""
		}
		mu.Lock()
		defer mu.Unlock()
		if built == nil || head != now || time.Since(at) > graphReviewTTL {
			b, err := buildReviewGraph(ctx, repo, graph.OpsFiles(opsFiles), log)
			if err != nil {
				return ""
			}
			built, head, at = b, now, time.Now()
		}
		return built.Affected(files, 0).Text()
	}
}

// buildReviewGraph builds the graph a review needs: the tree, evidence
// and mappings of the ops repository, the tracker, the agents and the
// formulas (the project's documents add no edge a change travels along).
func buildReviewGraph(ctx context.Context, repo *forge.RepoClient, opsFiles graph.Files, log zerolog.Logger) (*graph.Built, error) {
	fms, err := embeddedFormulas()
	if err != nil {
		return nil, err
	}
	return graph.Build(ctx, graph.Options{Forge: repo, Ops: opsFiles, Agents: roleNames(), Formulas: fms, Log: log})
}

// roleNames is the agent registry of the graph: every role.
func roleNames() []string {
	out := make([]string, 0, len(config.AllRoles()))
	for _, r := range config.AllRoles() {
		out = append(out, string(r))
	}
	return out
}

// predictorGraph is the predictor's view of the structural graph: the
// report of p's graph (orphans, cycles, thin objectives, bottlenecks) as
// text, built like the review's from the daemon's ops checkout as last
// fetched. "" without an ops checkout.
type predictorGraph struct {
	opsOf func(project string) *ops.Repo
	p     *config.Project
	repo  *forge.RepoClient
	log   zerolog.Logger
}

// Context implements predictor.Graph.
func (g predictorGraph) Context(ctx context.Context) (string, error) {
	r := g.opsOf(g.p.Name)
	if r == nil {
		return "", nil
	}
	return graphReport(ctx, r, g.repo, g.log)
}

// graphReport is the report of the structural graph (orphans, cycles,
// thin objectives, bottlenecks) as text, built from the ops checkout r as
// last fetched and the tracker as repo reads it; "" before r's first
// fetch.
func graphReport(ctx context.Context, r *ops.Repo, repo *forge.RepoClient, log zerolog.Logger) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, graphReviewTimeout)
	defer cancel()
	files, head, err := r.Local(ctx)
	if err != nil || head == "" {
		return "", err
	}
	b, err := buildReviewGraph(ctx, repo, graph.OpsFiles(files), log)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := b.Report(graph.ReportOptions{Bottlenecks: true}).WriteText(&out); err != nil {
		return "", err
	}
	return out.String(), nil
}
