package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/agents/filer"
	"github.com/disinto/disinto/agents/gardener"
	"github.com/disinto/disinto/agents/planner"
	"github.com/disinto/disinto/agents/predictor"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/vault"
)

// newGardenerAgent builds the gardener of one project, acting as
// gardener-bot (FORGE_GARDENER_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its state (lock, watermark, dust,
// applied manifests) under <data>/state/<project>/gardener, the gardener
// formula and the shared model runner. Its pushes authenticate as the
// same bot through lib/git's credential helper.
func newGardenerAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(gardener.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	reviewBot := ""
	if rb, err := d.Config.Bot(config.RoleReview); err == nil {
		reviewBot = rb.User
	}
	runner := d.FormulaRunner(rp)
	return gardener.New(gardener.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Driver: runner,
		ReviewBot: reviewBot, Redactor: s.Redactor, Log: d.Log,
	}), nil
}

// choreRoles are the roles whose chore/<role>-* pull requests the dev bot
// merges once approved and green.
var choreRoles = []config.Role{config.RoleGardener}

// choreBots maps each chore role to its bot's login (the dev bot's when
// the role has no token of its own).
func choreBots(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, r := range choreRoles {
		if b, err := cfg.Bot(r); err == nil {
			out[string(r)] = b.User
		}
	}
	return out
}

// The sprint filer (agents/filer) is a role entry of its own, not part of
// the architect's tick: it acts as filer-bot, which may write the project's
// issues and only read the ops repository, while the architect writes the
// ops repository and only reads the project. It runs on the architect's
// cadence (its interval or cron schedule; 6 h by default), at every start,
// and within seconds of any event of the ops repository, such as a sprint
// pull request being merged.

// newFilerAgent builds the filer of one project, acting as filer-bot
// (FORGE_FILER_TOKEN). Its row of the role table has no fallback to the
// dev bot (W-FI-2): the filer's identity is what keeps its writes to the
// project's issues.
func newFilerAgent(d daemon.Deps) (agent.Agent, error) {
	p := d.Project
	b, err := d.Config.Bot(config.RoleFiler)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", filer.ErrNoIdentity, err)
	case p.OpsRepo == "":
		return nil, fmt.Errorf("project %s (%s): the filer needs an ops repository (ops_repo)", p.Name, p.File)
	}
	fc, err := d.Services.ForgeAs(p, b, d.Log)
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(p.OpsRepo, "/")
	return filer.New(filer.Options{Project: p.Name, Repo: p.Repo, Bot: b.User, Forge: fc, Ops: fc.Client().Repo(owner, name), Log: d.Log})
}

// newArchitectAgent builds the architect of one project, acting as
// architect-bot (FORGE_ARCHITECT_TOKEN; its row of the role table has no
// fallback to the dev bot, which writes the project repository, as the
// architect must not), which reads the project repository and writes the
// ops repository: clients of both, an
// ops checkout of its own under <data>/clones/<project>/<bot>-ops for
// opening sprint pull requests, its state (lock, watermark, record)
// under <data>/state/<project>/architect, one conversation per sprint
// under <data>/state/<project>/sessions, the architect formula and the
// shared model runner. Decisions count from the project's maintainers
// (the project file, FORGE_ADMIN_USERS, else the repository's owners),
// never from the factory's bots.
func newArchitectAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(architect.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	b := rp.Bot
	owner, name, ok := strings.Cut(p.OpsRepo, "/")
	if !ok || owner == "" || name == "" {
		return nil, fmt.Errorf("project %s (%s): the architect needs ops_repo as owner/name, not %q", p.Name, p.File, p.OpsRepo)
	}
	g := d.GitAs(b)
	cname, email := git.Identity(b.User)
	proposer := s.Checkouts.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
		Dir: s.Layout.Ops(p.Name, b.User), Name: cname, Email: email, Log: d.Log})
	o := architect.Options{
		Project: p.Name, Primary: p.PrimaryBranch,
		Forge: rp.Forge, Ops: rp.Forge.Client().Repo(owner, name), Proposer: proposer,
		Driver: d.FormulaRunner(rp), Sessions: claude.NewSessionStore(s.Layout.SessionStore(), nil),
		Deciders: d.MaintainersOf(b), Bots: d.Config.BotUsernames, Redactor: s.Redactor, Log: d.Log,
	}
	// The architect bot only reads the project; the filer bot, which may
	// write its issues, applies the architect's labels.
	if fb, err := d.Config.Bot(config.RoleFiler); err == nil {
		fc, err := s.ForgeAs(p, fb, d.Log)
		if err != nil {
			return nil, err
		}
		o.Labeler, o.Filer = fc, fb.User
	}
	return architect.New(o), nil
}

// newPlannerAgent builds the planner of one project, acting as
// planner-bot (FORGE_PLANNER_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its own checkout of the ops
// repository under <data>/clones/<project>/<bot>-ops (the tree and the
// memory are committed as the planner, procurement requests proposed as
// it), its state (lock, watermark, run counter) under
// <data>/state/<project>/planner, the planner formula, the structural
// graph built from its ops checkout and the shared model runner. Without
// an ops repository in the project file the planner keeps no tree and
// says so in each run.
func newPlannerAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(planner.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	b := rp.Bot
	runner := d.FormulaRunner(rp)
	o := planner.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Driver: runner, Redactor: s.Redactor, Log: d.Log,
	}
	if owner, name, ok := strings.Cut(p.OpsRepo, "/"); ok {
		user, email := git.Identity(b.User)
		o.Ops = s.Checkouts.Open(ops.Options{Git: d.GitAs(b), URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
			Dir: s.Layout.Ops(p.Name, b.User), Name: user, Email: email, Log: d.Log})
		o.OpsForge = rp.Forge.Client().Repo(owner, name)
		o.Graph = plannerGraph{ops: o.Ops, repo: rp.Forge, log: d.Log}
	} else {
		d.Log.Info().Str("project", p.Name).Msg("planner: no ops repository; the tree and the memory are not kept")
	}
	return planner.New(o), nil
}

// plannerGraph is the planner's view of the structural graph: the report
// of p's graph, built like the review's, from the planner's own ops
// checkout as its run just fetched it.
type plannerGraph struct {
	ops  *ops.Repo
	repo *forge.RepoClient
	log  zerolog.Logger
}

// Context implements formulaagent.Graph.
func (g plannerGraph) Context(ctx context.Context) (string, error) {
	return graphReport(ctx, g.ops, g.repo, g.log)
}

// newPredictorAgent builds the predictor of one project, acting as
// predictor-bot (FORGE_PREDICTOR_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its state (lock, watermark, last
// filings) under <data>/state/<project>/predictor, the predictor formula,
// the project's ops checkout as last fetched, the vault's requester (as
// the vault bot, with its own ops checkout under
// <data>/vault/<project>/predictor-ops; none without a vault identity,
// and an exploit then files its prediction and says no request was made)
// and the shared model runner. No structural graph is wired yet.
func newPredictorAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(predictor.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	runner := d.FormulaRunner(rp)
	var requests predictor.Vault
	if v, err := vaultParts(d); err == nil {
		q, err := v.Requester(d.Log)
		if err != nil {
			return nil, err
		}
		requests = predictorVault{q: q}
	} else {
		d.Log.Info().Str("project", p.Name).Str("reason", s.Redactor.String(err.Error())).Msg("predictor: exploits make no vault request")
	}
	return predictor.New(predictor.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Driver: runner,
		Formulas: factoryFormulas(), Ops: predictorOps{s: s, p: p}, Vault: requests,
		Graph: predictorGraph{opsOf: s.OpsRepo, p: p, repo: rp.Forge, log: d.Log}, Redactor: s.Redactor, Log: d.Log,
	}), nil
}

// factoryFormulas are the names of the shipped formulas.
func factoryFormulas() []string {
	names, _ := fs.Glob(formulas.FS, "*.toml")
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(n, ".toml"))
	}
	return out
}

// predictorOps is p's ops repository for the predictor: the daemon's
// managed checkout as last fetched, else the configured ops_repo_root
// directory, else none.
type predictorOps struct {
	s *daemon.Services
	p *config.Project
}

// Snapshot implements predictor.Ops.
func (o predictorOps) Snapshot(ctx context.Context) (predictor.OpsTree, string, error) {
	if r := o.s.OpsRepo(o.p.Name); r != nil {
		files, head, err := r.Local(ctx)
		if err != nil || head == "" {
			return predictor.OpsTree{}, "", err
		}
		return predictor.OpsTree{FS: files.FS(), List: func(dir string) ([]string, error) {
			tf, err := files.List(dir)
			out := make([]string, 0, len(tf))
			for _, f := range tf {
				out = append(out, f.Path)
			}
			return out, err
		}}, head, nil
	}
	if root := o.p.OpsRepoRoot; root != "" {
		return predictor.OpsTree{FS: os.DirFS(root), List: func(dir string) ([]string, error) {
			es, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
			if os.IsNotExist(err) {
				return nil, nil
			}
			out := make([]string, 0, len(es))
			for _, e := range es {
				if e.Type().IsRegular() {
					out = append(out, e.Name())
				}
			}
			return out, err
		}}, "dir", nil
	}
	return predictor.OpsTree{}, "", nil
}

// predictorVault files the predictor's typed requests through the vault's
// requester, which validates them as the dispatcher does.
type predictorVault struct{ q *vault.Requester }

// Request implements predictor.Vault.
func (v predictorVault) Request(ctx context.Context, r predictor.VaultRequest) (predictor.VaultReceipt, error) {
	rc, err := v.q.RequestAction(ctx, vault.Action{ID: r.ID, Formula: r.Formula, Context: r.Context, Secrets: r.Secrets,
		TimeoutMinutes: vault.DefaultTimeoutMinutes})
	if err != nil {
		return predictor.VaultReceipt{}, err
	}
	return predictor.VaultReceipt{PR: rc.PR, Commit: rc.Commit}, nil
}
