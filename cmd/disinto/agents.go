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
type Deps struct {
	Config  *config.Config
	Project *config.Project
	Role    config.Role
	// DataDir is the daemon's data dir; per-issue state goes under
	// StateDir (<data>/state/<project>).
	DataDir  string
	StateDir string
	Log      zerolog.Logger
	// Services are shared by every agent of the process.
	Services *Services
	// Runtime runs the agents (its heartbeats feed the supervisor);
	// Metrics is /metrics, nil in one-shot runs.
	Runtime *agent.Runtime
	Metrics *metrics.Registry
}

// agentFactory builds the Agent of one role for one project.
type Factory func(d Deps) (agent.Agent, error)

// agentRegistry maps each implemented role to its constructor. A
// configured role without an entry is logged at start-up and not
// scheduled.
func agentRegistry() map[config.Role]Factory {
	return map[config.Role]Factory{
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
type RoleParts struct {
	Bot      config.Bot
	Forge    *forge.RepoClient
	Formula  *formula.Formula
	Live     *formula.Live
	Settings config.RoleSettings
}

// parts resolves the roleParts of d's role with the formula named name;
// check is what the agent requires of it beyond lint (nil: nothing).
func (d Deps) Parts(name string, check func(*formula.Formula) error) (RoleParts, error) {
	b, err := d.Config.Bot(d.Role)
	if err != nil {
		return RoleParts{}, fmt.Errorf("%s bot: %w", d.Role, err)
	}
	fc, err := d.Services.ForgeAs(d.Project, b, d.Log)
	if err != nil {
		return RoleParts{}, err
	}
	live, err := d.Services.LiveFormula(context.Background(), d.Project, d.Role, name, check, d.Log)
	if err != nil {
		return RoleParts{}, err
	}
	return RoleParts{Bot: b, Forge: fc, Formula: live.Formula(), Live: live, Settings: d.Project.Roles[d.Role]}, nil
}

// gitAs is git acting as bot b on d's project's forge: the credential
// reaches git through lib/git's helper, never argv or a config file.
func (d Deps) GitAs(b config.Bot) *git.Git {
	return git.New(git.Options{
		Credentials: &git.Credentials{URL: d.Project.ForgeURL, Username: b.User, Password: b.Password},
		Redactor:    d.Services.Redactor, Log: d.Log,
	})
}

// formulaRunner is the runtime of a scheduled formula role (the
// gardener, planner, predictor, architect) acting as rp's bot: its own
// clone of the project under <data>/clones/<project>/<bot>, its state
// under <data>/state/<project>/<role>, its live formula and the bot's
// lessons, the shared model runner and sandbox, and the role's model
// settings.
func (d Deps) FormulaRunner(rp RoleParts) *formulaagent.Driver {
	p, s, b := d.Project, d.Services, rp.Bot
	return formulaagent.NewRunner(formulaagent.Options{
		Role: string(d.Role), Project: p.Name, Git: d.GitAs(b), URL: p.ForgeURL + "/" + p.Repo + ".git",
		CloneDir: s.Layout.Clone(p.Name, b.User), Primary: p.PrimaryBranch, Bot: b.User,
		Forge: rp.Forge, StateDir: s.Layout.RoleState(p.Name, d.Role),
		Formula: rp.Formula, Live: rp.Live, Lessons: s.LessonsFor(p, d.Role), Claude: s.Claude, Sandbox: s.Sandbox,
		Model: rp.Settings.Model, Backend: rp.Settings.Backend, Redactor: s.Redactor, Log: d.Log,
	})
}

// newDevAgent builds the dev agent of one project, acting as dev-bot: its
// own clone under <data>/clones/<project>/<bot>, the dev formula and the
// shared model runner.
func newDevAgent(d Deps) (agent.Agent, error) {
	rp, err := d.Parts("dev", dev.CheckFormula)
	if err != nil {
		return nil, err
	}
	return d.buildDev(rp, "")
}

// buildDev builds a dev agent from its parts. stateDir empty means the
// project's default dev state, <data>/state/<project>.
func (d Deps) buildDev(rp RoleParts, stateDir string) (agent.Agent, error) {
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
		Mirrors: mirrorNames(p), MirrorVault: devMirrorVault(d),
		Forge: rp.Forge, Pulls: d.PullsView(rp.Forge), CILogs: logs, Claude: s.Claude,
		Git: dev.NewGit(dev.GitOptions{
			Clone:     s.Layout.Clone(p.Name, b.User),
			RemoteURL: p.ForgeURL + "/" + p.Repo + ".git", ForgeURL: p.ForgeURL,
			User: b.User, Password: b.Password, Primary: p.PrimaryBranch, Redactor: s.Redactor, Log: d.Log,
		}),
		Formula: rp.Formula, LiveFormula: rp.Live.Formula, Lessons: s.LessonsFor(p, d.Role), DataDir: d.DataDir, StateDir: stateDir,
		Sandbox: s.Sandbox, Model: settings.Model, Backend: settings.Backend,
		BotUsernames: cfg.BotUsernames, ReviewBot: reviewBot, ChoreBots: choreBots(cfg),
		Maintainers: d.maintainersOf(b), Secrets: cfg.Secrets(),
		Limits: devLimits(cfg, p), Ready: s.Ready(settings.Backend), Log: d.Log,
	})
}

// pullsView is the listing of d's project's open pull requests that its
// dev agents (lanes included) and review agent share, read as whichever
// of their bots asks first. A listing is reused for at most half the
// shorter of the dev and review polling intervals (and at most
// forgeview.DefaultMaxAge): long enough for the review tick staggered
// after the dev tick, never across two polls.
func (d Deps) PullsView(fc *forge.RepoClient) *forgeview.Reader {
	age := forgeview.DefaultMaxAge
	for _, r := range []config.Role{config.RoleDev, config.RoleReview} {
		if spec, ok := config.SpecOf(r); ok {
			if iv, sch := d.Project.Cadence(spec); sch == nil && iv/2 < age {
				age = max(iv/2, time.Nanosecond)
			}
		}
	}
	return d.Services.Views.Of(d.Project.Name, forgeview.Options{Forge: fc, MaxAge: age})
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
func newReviewAgent(d Deps) (agent.Agent, error) {
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
		Objectives: s.graphObjectives(p, rp.Forge, d.Log),
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: p.ForgeURL + "/" + p.Repo + ".git",
			CloneDir: s.Layout.ReviewClone(p.Name), Primary: p.PrimaryBranch,
			Sandbox: s.Sandbox, KeyPrefix: sandbox.Key("review", p.Name)}),
		StateDir: s.Layout.RoleState(p.Name, config.RoleReview),
		Backend:  rp.Settings.Backend,
		Model:    rp.Settings.Model,
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
