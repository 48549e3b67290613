package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/metrics"
)

// loginFile is where the CLI keeps a subscription login in its config
// directory; with CLAUDE_CONFIG_DIR set, the gateway authenticates the
// default backend with it (and nothing else reads it).
const loginFile = ".credentials.json"

// modelGateway is the gateway of a process's sessions, served on a
// loopback port of its own: the sessions run in this network namespace,
// and nothing outside the container reaches it.
type modelGateway struct {
	*gateway.Gateway
	url string
	srv *http.Server
}

// gatewayOptions are the gateway of cfg: its backends and the models'
// prices.
func gatewayOptions(cfg *config.Config, log zerolog.Logger) gateway.Options {
	o := gateway.Options{Backends: gatewayBackends(cfg), Log: log, Prices: map[string]gateway.Price{}}
	for model, p := range cfg.Prices {
		o.Prices[model] = gateway.Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
	}
	return o
}

// gatewayBackends are cfg's backends as the gateway holds them: each with
// its upstream, its credential and its concurrency.
func gatewayBackends(cfg *config.Config) []gateway.Backend {
	out := make([]gateway.Backend, 0, len(cfg.Backends))
	for _, name := range sortedBackends(cfg) {
		b := cfg.Backends[name]
		gb := gateway.Backend{Name: b.Name, URL: b.BaseURL, APIKey: b.APIKey, OAuthToken: b.OAuthToken, MaxConcurrent: b.MaxSessions}
		if name == config.DefaultBackend && b.APIKey == "" && b.OAuthToken == "" && cfg.Claude.ConfigDir != "" {
			gb.LoginFile = filepath.Join(cfg.Claude.ConfigDir, loginFile)
		}
		out = append(out, gb)
	}
	return out
}

// startGateway opens the gateway of cfg's backends on a loopback port,
// counting into reg (nil: no metrics).
func startGateway(cfg *config.Config, reg *metrics.Registry, log zerolog.Logger) (*modelGateway, error) {
	o := gatewayOptions(cfg, log)
	if reg != nil {
		o.Observer = reg
	}
	g, err := gateway.New(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	mg := &modelGateway{Gateway: g, url: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := mg.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("model gateway stopped")
		}
	}()
	return mg, nil
}

// close revokes every key and stops serving.
func (mg *modelGateway) close() error {
	mg.Gateway.Close()
	return mg.srv.Close()
}

// seedDayBudgets counts what the ledger recorded of each project's day
// against its day budget, so that a restart does not hand a project a
// fresh day.
func (s *Services) seedDayBudgets(cfg *config.Config, ledgerPath string, now time.Time) error {
	if s.gateway == nil {
		return nil
	}
	recs, _, err := ledger.Read(ledgerPath, ledger.Filter{Since: now.Add(-48 * time.Hour)})
	if err != nil {
		return fmt.Errorf("day budgets: %w", err)
	}
	for _, r := range recs {
		if p := cfg.Project(r.Project); p != nil {
			s.gateway.Spent(r.Project, r.Role, r.End, p.Budget.Zone,
				gateway.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD})
		}
	}
	return nil
}

// ServeGateway serves a model gateway of cfg's backends on addr for the
// daemons of several containers (`disinto gateway`) until ctx ends: its
// keys, budgets and backend limits hold across all of them. token opens
// its grant API to them; /healthz answers health checks; stateFile keeps
// its day tallies across restarts.
func ServeGateway(ctx context.Context, cfg *config.Config, addr, token, stateFile string, log zerolog.Logger) error {
	if len(token) < gateway.MinAdminToken {
		return fmt.Errorf("%s must be set, %d characters or more: the daemons that share the gateway send it", gateway.TokenEnv, gateway.MinAdminToken)
	}
	o := gatewayOptions(cfg, log)
	o.AdminToken, o.StateFile = token, stateFile
	if err := os.MkdirAll(filepath.Dir(stateFile), 0o700); err != nil {
		return fmt.Errorf("model gateway: %w", err)
	}
	g, err := gateway.New(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s (--listen) %s: %w", gateway.ListenEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("/", g)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info().Str("listen", ln.Addr().String()).Strs("backends", sortedBackends(cfg)).Msg("model gateway serving")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("model gateway: %w", err)
	case <-ctx.Done():
	}
	g.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}
