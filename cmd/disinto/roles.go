package main

import (
	"fmt"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/sandbox"
)

// agentRegistry maps each implemented role to its constructor: the
// constructors of the role table's rows.
func agentRegistry() daemon.Registry {
	return daemon.Registry{
		config.RoleDev:        newDevAgent,
		config.RoleReview:     newReviewAgent,
		config.RoleGardener:   newGardenerAgent,
		config.RolePredictor:  newPredictorAgent,
		config.RolePlanner:    newPlannerAgent,
		config.RoleSupervisor: newSupervisorAgent,
		config.RoleArchitect:  newArchitectAgent,
		config.RoleVault:      newVaultAgent,
		config.RoleFiler:      newFilerAgent,
		config.RoleReproduce:  newReproduceAgent,
	}
}

// newDevAgent builds a dev agent of one project: the project's own,
// acting as dev-bot, or one of its lanes ([agents.<name>]), acting as the
// lane's bot on the lane's backend with state of its own. Each has its
// own clone under <data>/clones/<project>/<bot>, the dev formula in force
// for the project and the shared model runner.
func newDevAgent(d daemon.Deps) (agent.Agent, error) {
	rp, err := d.Parts("dev", dev.CheckFormula)
	if err != nil {
		return nil, err
	}
	stateDir := "" // the project's default dev state, <data>/state/<project>
	if d.Lane != nil {
		stateDir = d.StateDir
	}
	ag, err := buildDev(d, rp, stateDir)
	if err != nil && d.Lane != nil {
		return nil, fmt.Errorf("agents.%s: %w", d.Lane.Name, err)
	}
	return ag, err
}

// laneName is the name of d's local-model lane, "" for the default dev
// agent.
func laneName(d daemon.Deps) string {
	if d.Lane == nil {
		return ""
	}
	return d.Lane.Name
}

// buildDev builds a dev agent from its parts. stateDir empty means the
// project's default dev state, <data>/state/<project>.
func buildDev(d daemon.Deps, rp daemon.RoleParts, stateDir string) (agent.Agent, error) {
	cfg, p, s := d.Config, d.Project, d.Services
	b, settings := rp.Bot, rp.Settings
	reviewBot := ""
	if rb, err := cfg.Bot(config.RoleReview); err == nil {
		reviewBot = rb.User
	}
	logs, err := ciLogSource(cfg, p, rp.Forge)
	if err != nil {
		return nil, err
	}
	return dev.New(dev.Options{
		Project: p.Name, Repo: p.Repo, PrimaryBranch: p.PrimaryBranch, CISystem: p.CI.System,
		Mirrors: mirrorNames(p), MirrorVault: devMirrorVault(d), MirrorRequests: s.Layout.MirrorRequests(p.Name, laneName(d)),
		Forge: rp.Forge, Pulls: d.PullsView(rp.Forge), CILogs: logs, Claude: s.Claude,
		Git: dev.NewGit(dev.GitOptions{
			Clone:     s.Layout.Clone(p.Name, b.User),
			RemoteURL: p.ForgeURL + "/" + p.Repo + ".git", ForgeURL: p.ForgeURL,
			User: b.User, Password: b.Password, Primary: p.PrimaryBranch, Redactor: s.Redactor, Log: d.Log,
		}),
		Formula: rp.Formula, LiveFormula: rp.Live.Formula, Lessons: s.LessonsFor(p, d.Role), DataDir: d.DataDir, StateDir: stateDir,
		Sandbox: s.Sandbox, Model: settings.Model, Backend: settings.Backend,
		BotUsernames: cfg.BotUsernames, ReviewBot: reviewBot, ChoreBots: choreBots(cfg),
		Maintainers: d.MaintainersOf(b), Secrets: cfg.Secrets(), Autonomy: p.Autonomy,
		Limits: devLimits(cfg, p), Ready: s.Ready(settings.Backend), Log: d.Log,
		Lease: devLease(cfg), Instance: s.Instance,
	})
}

// devLease is the dev agents' claim lease: several replicas acting as
// one bot tell their work apart by it; a single replica needs none.
func devLease(cfg *config.Config) time.Duration {
	if cfg.Shard.Single() {
		return 0
	}
	return cfg.Policy.ClaimLease
}

// ciLogSource is where the dev agent of p reads failed CI jobs' logs:
// Woodpecker's API for a woodpecker project, then the forge's Actions job
// logs (as the dev bot). A project without CI needs none.
func ciLogSource(cfg *config.Config, p *config.Project, fc *forge.RepoClient) (*cilog.Source, error) {
	if p.CI.System == config.CINone {
		return nil, nil
	}
	// The excerpt's budget is the project's [limits] ci_log_bytes.
	o := cilog.Options{Actions: fc, Budget: p.Limits.CILogBytes}
	if p.CI.System == config.CIWoodpecker {
		wp, err := cilog.NewWoodpecker(cilog.WoodpeckerOptions{
			Server: cfg.Woodpecker.Server, Token: cfg.Woodpecker.Token, RepoID: p.CI.WoodpeckerRepoID})
		if err != nil {
			return nil, fmt.Errorf("project %s (%s): %w", p.Name, p.File, err)
		}
		o.Woodpecker = wp
	}
	return cilog.New(o), nil
}

// newReviewAgent builds the review agent of one project, acting as
// review-bot (FORGE_REVIEW_TOKEN; there is no fallback to the dev bot,
// which would approve its own pull requests): its own clone and worktrees
// under <data>/review/<project>, the review-pr formula and the shared
// model runner.
func newReviewAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts("review-pr", nil)
	if err != nil {
		return nil, err
	}
	g := d.GitAs(rp.Bot)
	return review.New(review.Options{
		Project: p,
		Forge:   rp.Forge,
		Pulls:   d.PullsView(rp.Forge),
		Claude:  s.Claude,
		Formula: rp.Formula, LiveFormula: rp.Live.Formula, Lessons: s.LessonsFor(p, d.Role),
		Objectives: graphObjectives(s.OpsRepo, p, rp.Forge, d.Log),
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: p.ForgeURL + "/" + p.Repo + ".git",
			CloneDir: s.Layout.ReviewClone(p.Name), Primary: p.PrimaryBranch,
			Sandbox: s.Sandbox, KeyPrefix: sandbox.Key("review", p.Name)}),
		StateDir: s.Layout.RoleState(p.Name, config.RoleReview),
		Backend:  rp.Settings.Backend,
		Model:    rp.Settings.Model,
	})
}

// devLimits turns a project's [limits] into the dev agent's limits.
func devLimits(cfg *config.Config, p *config.Project) dev.Limits {
	l := p.Limits
	return dev.Limits{
		CIFixes: l.CIFixAttempts, ReviewRounds: l.ReviewRounds, Rebases: l.RebaseRounds, MergeAttempts: l.MergeAttempts,
		CITimeout: l.CITimeout, ReviewTimeout: l.ReviewTimeout, InFlight: l.InFlight,
		SessionTimeout: cfg.Claude.Timeout, MaxTurns: 200, IssueBudget: p.Budget.Issue,
	}
}
