package vault

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// Parts are what every vault operation of one project is built from: the
// ops repository as the vault identity, on the forge and as a checkout of
// its own.
type Parts struct {
	Project *config.Project
	Bot     config.Bot
	// Forge is the ops repository on the forge, as the vault bot.
	Forge *forge.RepoClient
	// Ops is the vault bot's checkout of the ops repository.
	Ops      *ops.Repo
	identity vaultlib.Identity
	admins   []string
	bots     []string
	redactor *redact.Redactor
}

// PartsOptions are what For resolves a project's Parts from.
type PartsOptions struct {
	Config  *config.Config
	Project *config.Project
	// Dir is the ops checkout's directory, the vault bot's.
	Dir string
	// Checkouts, when set, shares one Repo among the users of Dir in the
	// process; nil opens a Repo of the caller's own.
	Checkouts *ops.Checkouts
	// Admins are the maintainers whose approval counts.
	Admins   []string
	Redactor *redact.Redactor
	Log      zerolog.Logger
}

// For resolves the vault parts of o.Project. The vault bot must have
// credentials of its own: acting as the dev bot would let an agent's
// identity commit actions (spec 70 §3.9), so without them the error wraps
// vaultlib.ErrNoVaultIdentity.
func For(o PartsOptions) (*Parts, error) {
	p := o.Project
	if p.OpsRepo == "" {
		return nil, fmt.Errorf("project %s (%s): no ops_repo", p.Name, p.File)
	}
	b, err := o.Config.Bot(config.RoleVault)
	if err != nil || b.Fallback || b.Password == "" {
		return nil, fmt.Errorf("project %s: %w", p.Name, vaultlib.ErrNoVaultIdentity)
	}
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, Logger: o.Log, Redactor: o.Redactor})
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(p.OpsRepo, "/")
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: b.User, Password: b.Password},
		Redactor: o.Redactor, Log: o.Log})
	gname, email := git.Identity(b.User)
	oo := ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git", Dir: o.Dir,
		Branch: p.PrimaryBranch, Name: gname, Email: email, Log: o.Log}
	repo := ops.Open
	if o.Checkouts != nil {
		repo = o.Checkouts.Open
	}
	return &Parts{
		Project: p, Bot: b, Forge: fc.Repo(owner, name),
		Ops:      repo(oo),
		identity: vaultlib.Identity{Name: gname, Email: email},
		admins:   o.Admins, bots: o.Config.BotUsernames, redactor: o.Redactor,
	}, nil
}

// Redactor masks the secrets of the configuration the parts came from.
func (v *Parts) Redactor() *redact.Redactor { return v.redactor }

// Admins are the maintainers whose approval counts.
func (v *Parts) Admins() []string { return v.admins }

// Dispatcher builds the project's dispatcher around run (nil: inspect
// only) and the secrets sec.
func (v *Parts) Dispatcher(run vaultlib.Executor, instance string, sec vaultlib.SecretSource, log zerolog.Logger) (*vaultlib.Dispatcher, error) {
	return vaultlib.NewDispatcher(vaultlib.DispatcherOptions{
		Ops: v.Ops, Forge: v.Forge, Primary: v.Project.PrimaryBranch, Formulas: formulas.FS,
		Vault: v.identity, Admins: v.admins, Bots: v.bots, Runner: run, Secrets: sec,
		Redactor: v.redactor, Instance: instance, Log: log,
	})
}

// Requester files actions of the project as the vault bot.
func (v *Parts) Requester(log zerolog.Logger) (*vaultlib.Requester, error) {
	return vaultlib.NewRequester(vaultlib.RequestOptions{Ops: v.Ops, Forge: v.Forge, Formulas: formulas.FS, Log: log})
}
