// Package provision sets up a forge for one project, idempotently: bot
// users with least-privilege tokens, the owner, the project and ops
// repositories with the ops layout, per-bot .profile repositories,
// collaborators, the label vocabulary, branch protection, the project
// webhook, the env file and projects/<name>.toml. Every step checks before
// it creates, and the env file is saved after every change, so a run that
// is interrupted anywhere completes when it is run again.
package provision

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
)

// Options configures a provisioning run.
type Options struct {
	// ForgeURL is the forge base URL, e.g. http://forgejo:3000.
	ForgeURL string
	// AdminUser and AdminPassword, or AdminToken (with or without
	// AdminUser), identify a site admin.
	AdminUser     string
	AdminPassword string
	AdminToken    string
	// BootstrapTokenFile, if set, is a file that may hold a one-time
	// site-admin token of AdminUser (named BootstrapTokenPrefix...), used
	// to set the admin's password to AdminPassword, then revoked, and the
	// file removed.
	BootstrapTokenFile string
	// Repo is the project repository, owner/name.
	Repo string
	// Source, if set, is a git URL or path whose branches and tags are
	// pushed into the project repository while it is empty.
	Source string
	// Branch is the primary branch. Empty: the existing repository's
	// default branch, else the source's HEAD branch, else "main".
	Branch string
	// ProjectsDir receives <name>.toml; EnvFile receives the credentials.
	ProjectsDir string
	EnvFile     string
	// WebhookURL, if set, is registered on the project repository.
	WebhookURL string
	// ChatURL, if set, is the edge's public URL: the chat's OAuth2
	// application is made with its redirect URI under it (chatapp.go).
	ChatURL string
	// LocalBots are extra local-model dev identities, besides those the
	// existing project file declares in [agents.<name>] sections.
	LocalBots []LocalBot
	// RotateTokens replaces every bot password and token.
	RotateTokens bool
	// WaitForge is how long to wait for an unreachable forge to answer
	// (a forge starting next to the caller); 0 fails at once.
	WaitForge time.Duration

	// HTTPClient is passed to the forge clients; nil means the default.
	HTTPClient *http.Client
	// Logger receives debug lines.
	Logger zerolog.Logger
	// Random is the source of passwords and secrets; nil means crypto/rand.
	Random io.Reader
	// OnSecret, if set, is called with every secret value as soon as it is
	// read or generated, so the caller can mask it in its output.
	OnSecret func(string)
	// Git is the git binary used to push Source; empty means "git".
	Git string
	// Progress, if set, is called as each step starts: its name and its
	// place among the steps (1-based).
	Progress func(step string, n, total int)
}

// LocalBot is a local-model dev agent's identity: Name is the agent name
// (its variables are FORGE_TOKEN_<NAME> and FORGE_PASS_<NAME>), Login its
// forge user.
type LocalBot struct {
	Name  string
	Login string
}

var slugRE = regexp.MustCompile(`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$`)

// PlaceholderAdminPassword is the FORGE_ADMIN_PASS value .env.example
// ships with. Everyone who has read the repository knows it, so
// provisioning refuses it.
const PlaceholderAdminPassword = "change-me-before-first-start"

// validate checks the options that need no forge.
func (o *Options) validate() error {
	if err := checkAdminPassword(o.AdminPassword, o.AdminToken != ""); err != nil {
		return err
	}
	var missing []string
	if o.ForgeURL == "" {
		missing = append(missing, "forge URL")
	}
	if o.AdminToken == "" && o.AdminUser == "" {
		missing = append(missing, "admin user, or admin token")
	}
	if o.BootstrapTokenFile != "" && (o.AdminUser == "" || o.AdminToken != "") {
		return errors.New("provision: a bootstrap token sets the admin password: give the admin user and password, not an admin token")
	}
	if o.Repo == "" {
		missing = append(missing, "repo")
	}
	if o.ProjectsDir == "" {
		missing = append(missing, "projects dir")
	}
	if o.EnvFile == "" {
		missing = append(missing, "env file")
	}
	if len(missing) > 0 {
		return fmt.Errorf("provision: missing %s", strings.Join(missing, ", "))
	}
	if !slugRE.MatchString(o.Repo) {
		return fmt.Errorf("provision: repo %q: want owner/name", o.Repo)
	}
	// Both URLs end up on git's command line, which every user of the
	// host can read.
	if hasCredentials(o.ForgeURL) {
		return errors.New("provision: the forge URL carries credentials; give them as FORGE_ADMIN_USER and FORGE_ADMIN_PASS instead")
	}
	if hasCredentials(o.Source) {
		return errors.New("provision: the source URL carries credentials, which git would show on its command line; drop them and use a git credential helper, or a local path")
	}
	return nil
}

// hasCredentials reports whether s is an http(s) URL with a user or
// password in it.
func hasCredentials(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.User != nil
}

// checkAdminPassword refuses an admin password nobody chose: the
// placeholder of .env.example, or none at all (unless a token stands in).
func checkAdminPassword(pass string, haveToken bool) error {
	switch {
	case strings.TrimSpace(pass) == PlaceholderAdminPassword:
		return errors.New("provision: FORGE_ADMIN_PASS in .env is still the placeholder from .env.example; set a password of your own")
	case strings.TrimSpace(pass) == "" && !haveToken:
		return errors.New("provision: no admin password; set FORGE_ADMIN_PASS in .env (or give an admin token)")
	}
	return nil
}

// Run provisions the forge as described by opts. It returns what it did so
// far, also when it fails; the error names the forge call and the object.
func Run(ctx context.Context, opts Options) (*Report, error) {
	rep := &Report{}
	if err := opts.validate(); err != nil {
		return rep, err
	}
	p := &run{opts: opts, rep: rep, log: opts.Logger}
	p.owner, p.name, _ = strings.Cut(opts.Repo, "/")
	p.secret(opts.AdminPassword, opts.AdminToken)
	err := p.all(ctx)
	return rep, err
}

// run is the state of one provisioning run.
type run struct {
	opts   Options
	rep    *Report
	log    zerolog.Logger
	admin  *forge.Client
	login  string // the admin's login
	env    *EnvFile
	owner  string
	name   string
	branch string
	bots   []botSpec
	// localDevs are the logins of local-model dev bots (merge whitelist).
	localDevs []string
	// projectCreated: this run created the project repository, and
	// seeds its vision template and issue forms.
	projectCreated bool
}

func (p *run) opsName() string { return p.name + "-ops" }

func (p *run) secret(vals ...string) {
	if p.opts.OnSecret == nil {
		return
	}
	for _, v := range vals {
		if v != "" {
			p.opts.OnSecret(v)
		}
	}
}

// client returns a forge client for one identity.
func (p *run) client(user, password, token string) (*forge.Client, error) {
	return forge.New(forge.Options{
		URL: p.opts.ForgeURL, User: user, Password: password, Token: token,
		HTTPClient: p.opts.HTTPClient, Logger: p.log,
	})
}

func (p *run) all(ctx context.Context) error {
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"connect", p.connect},
		{"env file", p.openEnv},
		{"bots", p.ensureBots},
		{"owner", p.ensureOwner},
		{"project repo", p.ensureProjectRepo},
		{"merge settings", p.ensureMergeSettings},
		{"ops repo", p.ensureOpsRepo},
		{"profile repos", p.ensureProfiles},
		{"collaborators", p.ensureCollaborators},
		{"labels", p.ensureLabels},
		{"branch protection", p.ensureProtection},
		{"webhook", p.ensureWebhook},
		{"chat oauth2 app", p.ensureChatApp},
		{"project file", p.ensureProjectFile},
	}
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		p.log.Debug().Str("step", s.name).Msg("provision")
		if p.opts.Progress != nil {
			p.opts.Progress(s.name, i+1, len(steps))
		}
		if err := s.fn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// connect checks the admin credentials and that they belong to a site
// admin.
func (p *run) connect(ctx context.Context) error {
	if err := p.waitForge(ctx); err != nil {
		return err
	}
	if err := p.bootstrapAdmin(ctx); err != nil {
		return err
	}
	c, err := p.client(p.opts.AdminUser, p.opts.AdminPassword, p.opts.AdminToken)
	if err != nil {
		return err
	}
	me, err := c.Me(ctx)
	if err != nil {
		return fmt.Errorf("admin login: %w", err)
	}
	if !me.IsAdmin {
		return fmt.Errorf("admin login: %s is not a site administrator of %s", me.Login, p.opts.ForgeURL)
	}
	if p.opts.AdminUser != "" && !strings.EqualFold(me.Login, p.opts.AdminUser) {
		return fmt.Errorf("admin login: the admin token belongs to %s, not %s", me.Login, p.opts.AdminUser)
	}
	p.admin, p.login = c, me.Login
	return nil
}

// waitForge polls the forge anonymously until it answers with any HTTP
// status, for at most WaitForge.
func (p *run) waitForge(ctx context.Context) error {
	probe, err := forge.New(forge.Options{URL: p.opts.ForgeURL, HTTPClient: p.opts.HTTPClient, Logger: p.log, MaxRetries: -1})
	if err != nil {
		return err
	}
	answers := func(ctx context.Context) (bool, error) {
		_, err := probe.Me(ctx)
		var se *forge.StatusError
		if err == nil || (errors.As(err, &se) && se.Status < 500) {
			return true, nil
		}
		return false, nil
	}
	if ok, _ := answers(ctx); ok || p.opts.WaitForge <= 0 {
		return nil
	}
	p.log.Info().Str("forge", p.opts.ForgeURL).Msg("waiting for the forge")
	if err := waitFor(ctx, p.opts.WaitForge, answers); err != nil {
		return fmt.Errorf("forge %s did not answer within %s: %w", p.opts.ForgeURL, p.opts.WaitForge, err)
	}
	return nil
}

// openEnv reads the env file and records the forge URL and the admin's
// login.
func (p *run) openEnv(_ context.Context) error {
	env, err := OpenEnvFile(p.opts.EnvFile)
	if err != nil {
		return err
	}
	p.env = env
	for _, v := range []string{"DISINTO_WEBHOOK_SECRET", "FORGE_ADMIN_PASS"} {
		p.secret(env.Get(v))
	}
	// The admin's password or token is deliberately not stored: the env
	// file is the agents' credential store, and an agent holding the site
	// admin's credentials could approve and merge its own vault requests.
	changed := env.Set("FORGE_URL", p.opts.ForgeURL)
	changed = env.Set("FORGE_ADMIN_USER", p.login) || changed
	return p.saveEnv(changed)
}

// saveEnv writes the env file when it changed, or when it holds its
// secrets with permissions wider than 0600 (an operator's copy, or one
// written by an older version): a run that changes nothing still tightens
// them.
func (p *run) saveEnv(changed bool) error {
	if !changed && !p.env.Exposed() {
		return nil
	}
	return p.env.Save()
}

// ensureOwner creates the owner as an organisation unless it exists (as a
// user or an organisation).
func (p *run) ensureOwner(ctx context.Context) error {
	if strings.EqualFold(p.owner, p.login) {
		p.rep.add("owner", p.owner, StatusPresent, "the admin user")
		return nil
	}
	_, err := p.admin.GetUser(ctx, p.owner)
	if err == nil {
		p.rep.add("owner", p.owner, StatusPresent, "")
		return nil
	}
	if !errors.Is(err, forge.ErrNotFound) {
		return err
	}
	if _, err := p.admin.CreateOrg(ctx, p.owner); err != nil {
		return err
	}
	p.rep.add("owner", p.owner, StatusCreated, "organisation")
	return nil
}

// projectFile is where the project TOML goes.
func (p *run) projectFile() string {
	return filepath.Join(p.opts.ProjectsDir, p.name+".toml")
}
