package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// Services are built once per process and shared by every agent of every
// project: one model runner (so each backend's session limit holds
// daemon-wide, AD-002), one redactor, and one HTTP client whose forge
// requests are counted for /metrics.
type Services struct {
	Config *config.Config
	Layout datadir.Layout
	// checkouts share one ops checkout per project and identity.
	Checkouts ops.Checkouts
	Redactor  *redact.Redactor
	Claude    claude.Runner
	HTTP      *http.Client
	Sandbox   *sandbox.Sandbox
	// instance names this data dir's claims (see forge.Options.Instance).
	Instance string
	// mem connects the agents to the ops and .profile checkouts: live
	// formulas and lessons.
	mem memoryWiring
	// views are the projects' shared listings of the forge (forgeview),
	// one per project for its dev agents and review agent.
	Views forgeview.Set
	// gateway is the sessions' only way to a model.
	gateway *modelGateway
	// egress keeps isolated sessions off the network but for the
	// gateway and the egress proxy; nil when they are not isolated.
	egress *sessionEgress
	// Embedded are the formulas built into the binary, which overrides
	// in the .profile and ops repositories replace.
	Embedded fs.FS
}

// instanceID returns the id of the data dir's daemon, made on first use:
// one daemon holds a data dir at a time, so its claim comments from
// before a restart are its own orphans.
func instanceID(dataDir string) (string, error) {
	path := datadir.New(dataDir).Instance()
	if data, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(data))) == 32 {
		return strings.TrimSpace(string(data)), nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	if err := atomicfile.Write(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("instance id: %w", err)
	}
	return id, nil
}

// NewServices builds the shared services around the process's redactor
// (built from cfg.Secrets(), and shared with the logs and the ledger), and
// the sandbox of the model sessions, in o's data dir with o's environment
// and formulas. reg may be nil (one-shot runs).
func NewServices(cfg *config.Config, red *redact.Redactor, reg *metrics.Registry, o CoreOptions, log zerolog.Logger) (*Services, error) {
	if o.Formulas == nil {
		return nil, errors.New("services: no embedded formulas (CoreOptions.Formulas)")
	}
	dataDir := o.DataDir
	sb, err := openSandbox(dataDir, o.AllowUnisolated, cfg.SessionUIDs, log)
	if err != nil {
		return nil, err
	}
	instance, err := instanceID(dataDir)
	if err != nil {
		return nil, err
	}
	s := &Services{Config: cfg, Layout: datadir.New(dataDir), Redactor: red, HTTP: &http.Client{Timeout: cfg.Policy.ForgeTimeout}, Sandbox: sb,
		Instance: instance, Embedded: o.Formulas}
	if reg != nil {
		s.HTTP.Transport = reg.RoundTripper(nil)
	}
	if o.ForgeSilence > 0 {
		s.HTTP.Transport = forge.NewBreaker(s.HTTP.Transport, o.ForgeSilence)
	}
	names := sortedBackends(cfg)
	backends := make([]claude.Backend, 0, len(names))
	for _, n := range names {
		b := cfg.Backends[n]
		backends = append(backends, claudeBackend(b))
	}
	var granter gateway.Granter
	gwURL := cfg.Env.Get(gateway.URLEnv)
	if gwURL != "" {
		// A gateway shared with the daemons of other containers.
		granter = &gateway.Remote{URL: gwURL, Token: cfg.Env.Get(gateway.TokenEnv)}
	} else {
		gw, err := startGateway(cfg, reg, log)
		if err != nil {
			return nil, err
		}
		s.gateway, granter, gwURL = gw, gw.Gateway, gw.url
	}
	if s.egress, err = startEgress(cfg, sb, gwURL, instance, o.AllowUnisolated, reg, log); err != nil {
		_ = s.Close()
		return nil, err
	}
	runner, err := claude.New(claude.Options{
		Bin:            cfg.Claude.Bin,
		Backends:       backends,
		DefaultBackend: config.DefaultBackend,
		BaseEnv:        o.Environ,
		ConfigDir:      cfg.Claude.ConfigDir,
		IdleGrace:      cfg.Claude.IdleGrace,
		Timeout:        cfg.Claude.Timeout,
		TranscriptDir:  datadir.New(dataDir).Transcripts(),
		Redactor:       s.Redactor,
		Logger:         log,
		Gateway:        granter,
		GatewayURL:     s.egress.sessionsGateway(gwURL),
		EgressProxy:    s.egress.proxyURL(),
	})
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("model runner: %w", err)
	}
	s.Claude = runner
	return s, nil
}

// ForgeAs returns a client of project p's repository acting as bot b.
func (s *Services) ForgeAs(p *config.Project, b config.Bot, log zerolog.Logger) (*forge.RepoClient, error) {
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: b.Token, User: b.User, HTTPClient: s.HTTP, Logger: log,
		Redactor: s.Redactor, Instance: s.Instance})
	if err != nil {
		return nil, err
	}
	owner, name := p.OwnerName()
	return fc.Repo(owner, name), nil
}

// Formula resolves a formula for project p: an override in the ops
// repository checkout wins over the embedded default.
func (s *Services) Formula(p *config.Project, name string, log zerolog.Logger) (*formula.Formula, error) {
	f, _, err := formula.Resolver{Embedded: s.Embedded, OpsDir: p.OpsRepoRoot, Logger: log}.Resolve(name)
	if err != nil {
		return nil, fmt.Errorf("formula %s: %w", name, err)
	}
	return f, nil
}

// sortedBackends are the names of cfg's backends, sorted.
func sortedBackends(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Backends))
	for n := range cfg.Backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close stops the model gateway (every key it granted stops working)
// and the sessions' egress.
func (s *Services) Close() error {
	err := s.egress.close()
	if s.gateway == nil {
		return err
	}
	return errors.Join(s.gateway.close(), err)
}

// EgressMode is how far sessions reach (EgressFiltered,
// EgressUnfiltered), or "" when they are not isolated.
func (s *Services) EgressMode() string { return s.egress.egressMode() }
