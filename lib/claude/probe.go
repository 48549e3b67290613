package claude

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// ErrUnreachable is wrapped by Probe when a backend does not answer.
var ErrUnreachable = errors.New("model backend unreachable")

// Probe timings: an answer is trusted for ProbeTTL, a failure is retried
// after ProbeRetry, and one request may take ProbeTimeout.
const (
	ProbeTTL     = 30 * time.Second
	ProbeRetry   = 10 * time.Second
	ProbeTimeout = 5 * time.Second
)

// Health is what the last probe of one backend found.
type Health struct {
	Backend string `json:"backend"`
	// BaseURL is the probed endpoint; empty for a backend without one,
	// which is never probed.
	BaseURL   string    `json:"base_url,omitempty"`
	Reachable bool      `json:"reachable"`
	Checked   time.Time `json:"checked,omitzero"`
	// Since is when the backend entered its current state.
	Since time.Time `json:"since,omitzero"`
	Error string    `json:"error,omitempty"`
}

// probeState is the cached result of a backend's probes.
type probeState struct {
	mu      sync.Mutex
	checked time.Time
	since   time.Time
	err     error
	known   bool
}

// Prober is implemented by runners that can tell whether a backend
// answers; *Exec does.
type Prober interface {
	Probe(ctx context.Context, backend string) error
	Health() []Health
}

var _ Prober = (*Exec)(nil)

// probeClient sends the probes; no credential goes with them.
var probeClient = &http.Client{Timeout: ProbeTimeout}

// Probe reports whether backend (empty: the default) answers, with an
// error wrapping ErrUnreachable when it does not. A backend without a base
// URL (Anthropic's API through the CLI's default endpoint) is not probed
// and counts as reachable: the CLI reports its own failures. Otherwise it
// sends GET {base}/v1/models, which llama-server, vLLM and LiteLLM answer;
// any HTTP answer below 500 counts as reachable (an endpoint that wants a
// key still answers). Results are cached (ProbeTTL, ProbeRetry), so a
// caller may probe before every claim; a change of state is logged once.
func (e *Exec) Probe(ctx context.Context, backend string) error {
	b, err := e.backend(backend)
	if err != nil {
		return err
	}
	if b.BaseURL == "" {
		return nil
	}
	ps := &b.probe
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := e.now()
	ttl := ProbeTTL
	if ps.err != nil {
		ttl = ProbeRetry
	}
	if ps.known && now.Sub(ps.checked) < ttl {
		return ps.err
	}
	perr := e.probeOnce(ctx, b.Backend)
	if ctx.Err() != nil && perr != nil {
		return perr // our own deadline, not the backend's fault: not cached
	}
	changed := !ps.known || (ps.err == nil) != (perr == nil)
	if changed {
		ps.since = now
		log := e.opts.Logger.With().Str("backend", b.Name).Str("base_url", b.BaseURL).Logger()
		switch {
		case perr != nil:
			log.Warn().Str("error", e.opts.Redactor.String(perr.Error())).Msg("model backend unreachable; claiming no new work on it")
		case ps.known:
			log.Info().Msg("model backend reachable again")
		}
	}
	ps.known, ps.checked, ps.err = true, now, perr
	return perr
}

// probeOnce sends one probe request.
func (e *Exec) probeOnce(ctx context.Context, b Backend) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.BaseURL+"/v1/models", nil)
	if err != nil {
		return fmt.Errorf("backend %s: %w: %w", b.Name, ErrUnreachable, err)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return fmt.Errorf("backend %s: %w: %w", b.Name, ErrUnreachable, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("backend %s: %w: GET /v1/models answered %s", b.Name, ErrUnreachable, resp.Status)
	}
	return nil
}

// Health returns the last probe of every backend that has a base URL,
// sorted by name; a backend not probed yet has a zero Checked.
func (e *Exec) Health() []Health {
	out := make([]Health, 0, len(e.backends))
	for _, b := range e.backends {
		if b.BaseURL == "" {
			continue
		}
		b.probe.mu.Lock()
		h := Health{Backend: b.Name, BaseURL: b.BaseURL, Reachable: b.probe.known && b.probe.err == nil,
			Checked: b.probe.checked, Since: b.probe.since}
		if b.probe.err != nil {
			h.Error = e.opts.Redactor.String(b.probe.err.Error())
		}
		b.probe.mu.Unlock()
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Backend < out[j].Backend })
	return out
}
