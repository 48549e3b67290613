package review

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
)

// Deps are what the daemon gives the review agent of one project.
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

// FromConfig builds the review agent of d.Project, acting as the review bot
// (FORGE_REVIEW_TOKEN; there is no fallback to the dev bot, which would
// approve its own pull requests): its forge client, its own clone and
// worktrees under <data>/review/<project>, the review-pr formula (an ops
// repository override applies) and the model runner. Nothing touches the
// network until the first tick.
func FromConfig(d Deps) (*Agent, error) {
	cfg, p := d.Config, d.Project
	b, err := cfg.Bot(config.RoleReview)
	if err != nil {
		return nil, fmt.Errorf("review bot: %w", err)
	}
	red := redact.New(cfg.Secrets()...)
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, Logger: d.Log})
	if err != nil {
		return nil, err
	}
	owner, name := p.OwnerName()
	res := formula.Resolver{Embedded: formulas.FS, OpsDir: p.OpsRepoRoot, Logger: d.Log}
	f, _, err := res.Resolve("review-pr")
	if err != nil {
		return nil, err
	}
	runner := d.Claude
	if runner == nil {
		if runner, err = newRunner(cfg, d.DataDir, red, d.Log); err != nil {
			return nil, err
		}
	}
	g := git.New(git.Options{
		Credentials: &git.Credentials{URL: p.ForgeURL, Username: b.User, Password: b.Password},
		Redactor:    red, Log: d.Log,
	})
	root := filepath.Join(d.DataDir, "review", p.Name)
	settings := p.Roles[config.RoleReview]
	return New(Options{
		Project:  p,
		Forge:    fc.Repo(owner, name),
		Claude:   runner,
		Formula:  f,
		Checkout: NewGitCheckout(g, p.ForgeURL+"/"+p.Repo+".git", filepath.Join(root, "clone"), filepath.Join(root, "worktrees")),
		StateDir: filepath.Join(d.DataDir, "state", p.Name, "review"),
		Backend:  settings.Backend,
		Model:    settings.Model,
	})
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
		TranscriptDir: filepath.Join(data, "transcripts", "review"), Redactor: red, Logger: log,
	})
}
