package dev

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/redact"
)

// Deps are what the daemon gives the agent of one project.
type Deps struct {
	Config  *config.Config
	Project *config.Project
	// DataDir is the daemon's data directory.
	DataDir string
	// Claude is the daemon-wide runner (one semaphore per backend); nil
	// builds one for this agent from Config.
	Claude claude.Runner
	Log    zerolog.Logger
}

// FromConfig builds the dev agent of d.Project: the dev bot's forge client,
// its own clone under <data>/clones/<project>/<bot>, the dev formula (with
// overrides from the ops repository) and the model runner.
func FromConfig(d Deps) (*Agent, error) {
	cfg, p := d.Config, d.Project
	b, err := cfg.Bot(config.RoleDev)
	if err != nil {
		return nil, fmt.Errorf("dev bot: %w", err)
	}
	red := redact.New(cfg.Secrets()...)
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, Logger: d.Log})
	if err != nil {
		return nil, err
	}
	owner, name := p.OwnerName()
	res := formula.Resolver{Embedded: formulas.FS, OpsDir: p.OpsRepoRoot, Logger: d.Log}
	f, _, err := res.Resolve("dev")
	if err != nil {
		return nil, err
	}
	runner := d.Claude
	if runner == nil {
		if runner, err = newRunner(cfg, d.DataDir, red, d.Log); err != nil {
			return nil, err
		}
	}
	settings := p.Roles[config.RoleDev]
	return New(Options{
		Project: p.Name, Repo: p.Repo, PrimaryBranch: p.PrimaryBranch, CISystem: p.CI.System, Mirrors: p.Mirrors,
		Forge: fc.Repo(owner, name), Claude: runner,
		Git: NewGit(GitOptions{
			Clone:     filepath.Join(d.DataDir, "clones", p.Name, b.User),
			RemoteURL: p.ForgeURL + "/" + p.Repo + ".git", ForgeURL: p.ForgeURL,
			User: b.User, Password: b.Password, Primary: p.PrimaryBranch, Redactor: red, Log: d.Log,
		}),
		Formula: f, DataDir: d.DataDir, Model: settings.Model, Backend: settings.Backend,
		BotUsernames: cfg.BotUsernames, ReviewBot: reviewBot(cfg),
		Maintainers: splitList(cfg.Env.Get("FORGE_ADMIN_USERS")), Secrets: cfg.Secrets(),
		Limits: Limits{SessionTimeout: cfg.Claude.Timeout, MaxTurns: 200}, Log: d.Log,
	})
}

func reviewBot(cfg *config.Config) string {
	b, err := cfg.Bot(config.RoleReview)
	if err != nil {
		return ""
	}
	return b.User
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// newRunner builds a claude runner over every configured backend.
func newRunner(cfg *config.Config, data string, red *redact.Redactor, log zerolog.Logger) (claude.Runner, error) {
	names := make([]string, 0, len(cfg.Backends))
	for n := range cfg.Backends {
		names = append(names, n)
	}
	sort.Strings(names)
	var bs []claude.Backend
	for _, n := range names {
		b := cfg.Backends[n]
		bs = append(bs, claude.Backend{Name: b.Name, BaseURL: b.BaseURL, APIKey: b.APIKey, Model: b.Model, MaxSessions: b.MaxSessions})
	}
	return claude.New(claude.Options{
		Bin: cfg.Claude.Bin, Backends: bs, DefaultBackend: config.BackendAnthropic, BaseEnv: os.Environ(),
		ConfigDir: cfg.Claude.ConfigDir, IdleGrace: cfg.Claude.IdleGrace, Timeout: cfg.Claude.Timeout,
		TranscriptDir: filepath.Join(data, "transcripts", "dev"), Redactor: red, Logger: log,
	})
}
