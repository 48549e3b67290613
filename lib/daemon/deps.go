package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/metrics"
)

// Deps is what a role's constructor gets for one (project, role).
type Deps struct {
	Config  *config.Config
	Project *config.Project
	Role    config.Role
	// Lane, when set, is the [agents.<name>] section of a lane of the
	// role (a dev agent on a backend of its own): the agent acts as the
	// lane's bot with the lane's model settings.
	Lane *config.LocalAgent
	// DataDir is the daemon's data dir; per-issue state goes under
	// StateDir (<data>/state/<project>, or the lane's own).
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

// Factory builds the Agent of one role for one project: the constructor
// of a row of the role table. A factory's error that wraps
// ErrNotScheduled or config.ErrNoIdentity leaves the role of that project
// out of the schedule instead of stopping the daemon.
type Factory func(d Deps) (agent.Agent, error)

// Registry maps each implemented role to its constructor. A configured
// role without an entry is logged at start-up and not scheduled.
type Registry map[config.Role]Factory

// RoleParts are what every agent of a role is built from: the role's bot,
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

// Parts resolves the RoleParts of d's role (or lane) with the formula
// named name; check is what the agent requires of it beyond lint (nil:
// nothing). A lane acts as its own bot with its own model settings, and
// works by the formula in force for the role on the project.
func (d Deps) Parts(name string, check func(*formula.Formula) error) (RoleParts, error) {
	b, settings, err := d.identity()
	if err != nil {
		return RoleParts{}, err
	}
	fc, err := d.Services.ForgeAs(d.Project, b, d.Log)
	if err != nil {
		return RoleParts{}, d.laneError(err)
	}
	live, err := d.Services.LiveFormula(context.Background(), d.Project, d.Role, name, check, d.Log)
	if err != nil {
		return RoleParts{}, d.laneError(err)
	}
	return RoleParts{Bot: b, Forge: fc, Formula: live.Formula(), Live: live, Settings: settings}, nil
}

// identity is the bot d's agent acts as and its settings.
func (d Deps) identity() (config.Bot, config.RoleSettings, error) {
	if la := d.Lane; la != nil {
		b, err := d.Config.LocalBot(*la)
		return b, config.RoleSettings{Enabled: true, Interval: la.PollInterval, Model: la.Model, Backend: la.Name}, d.laneError(err)
	}
	b, err := d.Config.Bot(d.Role)
	if err != nil {
		return config.Bot{}, config.RoleSettings{}, fmt.Errorf("%s bot: %w", d.Role, err)
	}
	return b, d.Project.Roles[d.Role], nil
}

// laneError names the lane's section in err; nil stays nil.
func (d Deps) laneError(err error) error {
	if err == nil || d.Lane == nil {
		return err
	}
	return fmt.Errorf("agents.%s: %w", d.Lane.Name, err)
}

// GitAs is git acting as bot b on d's project's forge: the credential
// reaches git through lib/git's helper, never argv or a config file.
func (d Deps) GitAs(b config.Bot) *git.Git {
	return git.New(git.Options{
		Credentials: &git.Credentials{URL: d.Project.ForgeURL, Username: b.User, Password: b.Password},
		Redactor:    d.Services.Redactor, Log: d.Log,
	})
}

// FormulaRunner is the runtime of a scheduled formula role (the
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

// PullsView is the listing of d's project's open pull requests that its
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

// maintainers are the humans an escalation @-mentions, from the

// ownersTimeout bounds the forge lookup of a repository's owners.
const ownersTimeout = 15 * time.Second

// Maintainers are the humans an escalation @-mentions, from the
// environment: FORGE_ADMIN_USERS, else the admin `disinto init`
// provisioned with (FORGE_ADMIN_USER, which is all init writes). See
// MaintainersOf for the project file and the forge.
func Maintainers(env config.Env) []string {
	if v := splitList(env.Get("FORGE_ADMIN_USERS")); len(v) > 0 {
		return v
	}
	return splitList(env.Get("FORGE_ADMIN_USER"))
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// MaintainersOf returns the humans an escalation of d's project
// @-mentions: the project file's maintainers, else the environment's
// (Maintainers), else the repository's owners on the forge (its user, or
// its organisation's Owners team) as bot b sees them. The forge is asked
// once, when the agent is built; a forge that does not answer then leaves
// escalations without a mention, and says so.
func (d Deps) MaintainersOf(b config.Bot) []string {
	if len(d.Project.Maintainers) > 0 {
		return d.Project.Maintainers
	}
	if m := Maintainers(d.Config.Env); len(m) > 0 {
		return m
	}
	fc, err := forge.New(forge.Options{URL: d.Project.ForgeURL, Token: b.Token, User: b.User, HTTPClient: d.Services.HTTP,
		Logger: d.Log, Redactor: d.Services.Redactor})
	if err != nil {
		d.Log.Warn().Str("error", d.Services.Redactor.Error(err)).Msg("no maintainers to mention in escalations")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownersTimeout)
	defer cancel()
	owner, _ := d.Project.OwnerName()
	m, err := fc.RepoOwners(ctx, owner)
	if err != nil || len(m) == 0 {
		d.Log.Warn().Str("owner", owner).Str("error", d.Services.Redactor.Error(err)).
			Msg("could not read the repository's owners: escalations mention nobody (set maintainers in the project file)")
		return nil
	}
	return m
}
