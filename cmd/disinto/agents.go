package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/sandbox"
)

// agentDeps is what an agent constructor gets for one (project, role).
type agentDeps struct {
	Config  *config.Config
	Project *config.Project
	Role    config.Role
	// DataDir is the daemon's data dir; per-issue state goes under
	// StateDir (<data>/state/<project>).
	DataDir  string
	StateDir string
	Log      zerolog.Logger
	// Services are shared by every agent of the process.
	Services *services
	// Runtime runs the agents (its heartbeats feed the supervisor);
	// Metrics is /metrics, nil in one-shot runs.
	Runtime *agent.Runtime
	Metrics *metrics.Registry
}

// agentFactory builds the Agent of one role for one project.
type agentFactory func(d agentDeps) (agent.Agent, error)

// agentRegistry maps each implemented role to its constructor. A
// configured role without an entry is logged at start-up and not
// scheduled.
func agentRegistry() map[config.Role]agentFactory {
	return map[config.Role]agentFactory{
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

// roleParts are what every agent of a role is built from: the role's bot,
// a forge client of the project acting as it, the role's formula (live:
// .profile and ops repository overrides apply as they land) and the
// project's settings of the role.
type roleParts struct {
	bot      config.Bot
	forge    *forge.RepoClient
	formula  *formula.Formula
	live     *formula.Live
	settings config.RoleSettings
}

// parts resolves the roleParts of d's role with the formula named name;
// check is what the agent requires of it beyond lint (nil: nothing).
func (d agentDeps) parts(name string, check func(*formula.Formula) error) (roleParts, error) {
	b, err := d.Config.Bot(d.Role)
	if err != nil {
		return roleParts{}, fmt.Errorf("%s bot: %w", d.Role, err)
	}
	fc, err := d.Services.forgeAs(d.Project, b, d.Log)
	if err != nil {
		return roleParts{}, err
	}
	live, err := d.Services.liveFormula(context.Background(), d.Project, d.Role, name, check, d.Log)
	if err != nil {
		return roleParts{}, err
	}
	return roleParts{bot: b, forge: fc, formula: live.Formula(), live: live, settings: d.Project.Roles[d.Role]}, nil
}

// gitAs is git acting as bot b on d's project's forge: the credential
// reaches git through lib/git's helper, never argv or a config file.
func (d agentDeps) gitAs(b config.Bot) *git.Git {
	return git.New(git.Options{
		Credentials: &git.Credentials{URL: d.Project.ForgeURL, Username: b.User, Password: b.Password},
		Redactor:    d.Services.redactor, Log: d.Log,
	})
}

// formulaRunner is the runtime of a scheduled formula role (the
// gardener, planner, predictor, architect) acting as rp's bot: its own
// clone of the project under <data>/clones/<project>/<bot>, its state
// under <data>/state/<project>/<role>, its live formula and the bot's
// lessons, the shared model runner and sandbox, and the role's model
// settings.
func (d agentDeps) formulaRunner(rp roleParts) *formulaagent.Driver {
	p, s, b := d.Project, d.Services, rp.bot
	return formulaagent.NewRunner(formulaagent.Options{
		Role: string(d.Role), Project: p.Name, Git: d.gitAs(b), URL: p.ForgeURL + "/" + p.Repo + ".git",
		CloneDir: s.layout.Clone(p.Name, b.User), Primary: p.PrimaryBranch, Bot: b.User,
		Forge: rp.forge, StateDir: s.layout.RoleState(p.Name, d.Role),
		Formula: rp.formula, Live: rp.live, Lessons: s.lessonsFor(p, d.Role), Claude: s.claude, Sandbox: s.sandbox,
		Model: rp.settings.Model, Backend: rp.settings.Backend, Redactor: s.redactor, Log: d.Log,
	})
}

// newDevAgent builds the dev agent of one project, acting as dev-bot: its
// own clone under <data>/clones/<project>/<bot>, the dev formula and the
// shared model runner.
func newDevAgent(d agentDeps) (agent.Agent, error) {
	rp, err := d.parts("dev", dev.CheckFormula)
	if err != nil {
		return nil, err
	}
	return d.buildDev(rp, "")
}

// buildDev builds a dev agent from its parts. stateDir empty means the
// project's default dev state, <data>/state/<project>.
func (d agentDeps) buildDev(rp roleParts, stateDir string) (agent.Agent, error) {
	cfg, p, s := d.Config, d.Project, d.Services
	b, settings := rp.bot, rp.settings
	reviewBot := ""
	if rb, err := cfg.Bot(config.RoleReview); err == nil {
		reviewBot = rb.User
	}
	logs, err := ciLogSource(cfg, p, rp.forge)
	if err != nil {
		return nil, err
	}
	return dev.New(dev.Options{
		Project: p.Name, Repo: p.Repo, PrimaryBranch: p.PrimaryBranch, CISystem: p.CI.System,
		Mirrors: mirrorNames(p), MirrorVault: devMirrorVault(d),
		Forge: rp.forge, Pulls: d.pullsView(rp.forge), CILogs: logs, Claude: s.claude,
		Git: dev.NewGit(dev.GitOptions{
			Clone:     s.layout.Clone(p.Name, b.User),
			RemoteURL: p.ForgeURL + "/" + p.Repo + ".git", ForgeURL: p.ForgeURL,
			User: b.User, Password: b.Password, Primary: p.PrimaryBranch, Redactor: s.redactor, Log: d.Log,
		}),
		Formula: rp.formula, LiveFormula: rp.live.Formula, Lessons: s.lessonsFor(p, d.Role), DataDir: d.DataDir, StateDir: stateDir,
		Sandbox: s.sandbox, Model: settings.Model, Backend: settings.Backend,
		BotUsernames: cfg.BotUsernames, ReviewBot: reviewBot, ChoreBots: choreBots(cfg),
		Maintainers: d.maintainersOf(b), Secrets: cfg.Secrets(),
		Limits: devLimits(cfg, p), Ready: s.ready(settings.Backend), Log: d.Log,
	})
}

// pullsView is the listing of d's project's open pull requests that its
// dev agents (lanes included) and review agent share, read as whichever
// of their bots asks first. A listing is reused for at most half the
// shorter of the dev and review polling intervals (and at most
// forgeview.DefaultMaxAge): long enough for the review tick staggered
// after the dev tick, never across two polls.
func (d agentDeps) pullsView(fc *forge.RepoClient) *forgeview.Reader {
	age := forgeview.DefaultMaxAge
	for _, r := range []config.Role{config.RoleDev, config.RoleReview} {
		if spec, ok := config.SpecOf(r); ok {
			if iv, sch := d.Project.Cadence(spec); sch == nil && iv/2 < age {
				age = max(iv/2, time.Nanosecond)
			}
		}
	}
	return d.Services.views.Of(d.Project.Name, forgeview.Options{Forge: fc, MaxAge: age})
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
func newReviewAgent(d agentDeps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.parts("review-pr", nil)
	if err != nil {
		return nil, err
	}
	g := d.gitAs(rp.bot)
	return review.New(review.Options{
		Project: p,
		Forge:   rp.forge,
		Pulls:   d.pullsView(rp.forge),
		Claude:  s.claude,
		Formula: rp.formula, LiveFormula: rp.live.Formula, Lessons: s.lessonsFor(p, d.Role),
		Objectives: s.graphObjectives(p, rp.forge, d.Log),
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: p.ForgeURL + "/" + p.Repo + ".git",
			CloneDir: s.layout.ReviewClone(p.Name), Primary: p.PrimaryBranch,
			Sandbox: s.sandbox, KeyPrefix: sandbox.Key("review", p.Name)}),
		StateDir: s.layout.RoleState(p.Name, config.RoleReview),
		Backend:  rp.settings.Backend,
		Model:    rp.settings.Model,
	})
}

// maintainers are the humans an escalation @-mentions, from the
// environment: FORGE_ADMIN_USERS, else the admin `disinto init`
// provisioned with (FORGE_ADMIN_USER, which is all init writes). See
// maintainersOf for the project file and the forge.
func maintainers(env config.Env) []string {
	if v := splitList(env.Get("FORGE_ADMIN_USERS")); len(v) > 0 {
		return v
	}
	return splitList(env.Get("FORGE_ADMIN_USER"))
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
