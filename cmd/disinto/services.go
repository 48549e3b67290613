package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// services are built once per process and shared by every agent of every
// project: one model runner (so each backend's session limit holds
// daemon-wide, AD-002), one redactor, and one HTTP client whose forge
// requests are counted for /metrics.
type services struct {
	cfg      *config.Config
	dataDir  string
	redactor *redact.Redactor
	claude   claude.Runner
	http     *http.Client
	sandbox  *sandbox.Sandbox
}

// newServices builds the shared services around the process's redactor
// (built from cfg.Secrets(), and shared with the logs and the ledger), and
// the sandbox of the model sessions. reg may be nil (one-shot runs).
func newServices(cfg *config.Config, red *redact.Redactor, dataDir string, reg *metrics.Registry, environ []string, allowUnisolated bool, log zerolog.Logger) (*services, error) {
	sb, err := openSandbox(dataDir, allowUnisolated, cfg.SessionUIDs, log)
	if err != nil {
		return nil, err
	}
	s := &services{cfg: cfg, dataDir: dataDir, redactor: red, http: &http.Client{Timeout: cfg.Policy.ForgeTimeout}, sandbox: sb}
	if reg != nil {
		s.http.Transport = reg.RoundTripper(nil)
	}
	names := make([]string, 0, len(cfg.Backends))
	for n := range cfg.Backends {
		names = append(names, n)
	}
	sort.Strings(names)
	backends := make([]claude.Backend, 0, len(names))
	for _, n := range names {
		b := cfg.Backends[n]
		backends = append(backends, claude.Backend{Name: b.Name, BaseURL: b.BaseURL, APIKey: b.APIKey, Model: b.Model, MaxSessions: b.MaxSessions})
	}
	runner, err := claude.New(claude.Options{
		Bin:            cfg.Claude.Bin,
		Backends:       backends,
		DefaultBackend: config.DefaultBackend,
		BaseEnv:        environ,
		ConfigDir:      cfg.Claude.ConfigDir,
		IdleGrace:      cfg.Claude.IdleGrace,
		Timeout:        cfg.Claude.Timeout,
		TranscriptDir:  filepath.Join(dataDir, "transcripts"),
		Redactor:       s.redactor,
		Logger:         log,
	})
	if err != nil {
		return nil, fmt.Errorf("model runner: %w", err)
	}
	s.claude = runner
	return s, nil
}

// forgeAs returns a client of project p's repository acting as bot b.
func (s *services) forgeAs(p *config.Project, b config.Bot, log zerolog.Logger) (*forge.RepoClient, error) {
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, HTTPClient: s.http, Logger: log, Redactor: s.redactor})
	if err != nil {
		return nil, err
	}
	owner, name := p.OwnerName()
	return fc.Repo(owner, name), nil
}

// formula resolves a formula for project p: an override in the ops
// repository checkout wins over the embedded default.
func (s *services) formula(p *config.Project, name string, log zerolog.Logger) (*formula.Formula, error) {
	f, _, err := formula.Resolver{Embedded: formulas.FS, OpsDir: p.OpsRepoRoot, Logger: log}.Resolve(name)
	if err != nil {
		return nil, fmt.Errorf("formula %s: %w", name, err)
	}
	return f, nil
}

// projectDir is where per-project working data of one kind lives.
func (s *services) projectDir(kind string, p *config.Project, parts ...string) string {
	return filepath.Join(append([]string{s.dataDir, kind, p.Name}, parts...)...)
}
