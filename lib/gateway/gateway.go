// Package gateway is the model gateway: the one way a model session
// reaches a model. Each run gets a capability key of its own (Open) that
// is good only on this gateway and only while the run lives; the gateway
// checks it, adds the backend's real credential (an API key, a
// subscription's OAuth token or the access token of a login file) and
// relays the request. Sessions never hold a model credential.
//
// On the way back it meters what the backend says it used, streaming
// included, so a run's token counts come from the wire and not from the
// session's own report. It holds each backend's concurrency across every
// session that uses it, and relays nothing but the model endpoints.
package gateway

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DefaultUpstream is the Anthropic API, where a backend without a URL
// sends its requests.
const DefaultUpstream = "https://api.anthropic.com"

// oauthBeta is the beta flag the API requires of requests authenticated
// with a subscription's OAuth token.
const oauthBeta = "oauth-2025-04-20"

// maxRequestBody bounds a relayed request body: a model request carries
// the conversation, which the CLI compacts long before this.
const maxRequestBody = 32 << 20

// Errors of Open.
var (
	ErrUnknownBackend = errors.New("gateway: unknown backend")
	ErrClosed         = errors.New("gateway: closed")
)

// Backend is one upstream and the credential the gateway adds to what it
// relays there. Exactly one of APIKey, OAuthToken and LoginFile is used,
// in that order; none means the upstream needs no credential (a local
// model server).
type Backend struct {
	// Name is the backend's name in the configuration.
	Name string
	// URL is the upstream's base URL; DefaultUpstream when empty.
	URL string
	// APIKey is sent as x-api-key.
	APIKey string
	// OAuthToken is a subscription's long-lived token, sent as a bearer
	// token with the OAuth beta flag.
	OAuthToken string
	// LoginFile is a subscription login (the CLI's .credentials.json),
	// whose access token is sent like OAuthToken. The gateway reads it and
	// never hands it to a session.
	LoginFile string
	// MaxConcurrent bounds the requests relayed to this backend at once,
	// across every session and process that shares the gateway; 0 means
	// no bound.
	MaxConcurrent int
}

// Grant is what a key is good for: one run of one role of one project on
// one backend.
type Grant struct {
	Project, Role, Run string
	Backend            string
	// Limits are the budgets the run is held to; TZ is the project's
	// timezone, where its days begin (UTC when nil).
	Limits Limits
	TZ     *time.Location
}

// Usage is what a backend reported using, summed over a run's requests.
type Usage struct {
	InputTokens   int64 `json:"input_tokens"`
	OutputTokens  int64 `json:"output_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	// Requests counts the model requests relayed.
	Requests int `json:"requests"`
	// CostUSD is what the priced requests cost; Unpriced counts those
	// whose model has no price, whose cost is unknown.
	CostUSD  float64 `json:"cost_usd"`
	Unpriced int     `json:"unpriced,omitempty"`
}

// add adds u's counters to s.
func (s *Usage) add(u Usage) {
	s.InputTokens += u.InputTokens
	s.OutputTokens += u.OutputTokens
	s.CacheRead += u.CacheRead
	s.CacheCreation += u.CacheCreation
	s.Requests += u.Requests
	s.CostUSD += u.CostUSD
	s.Unpriced += u.Unpriced
}

// Options configure a Gateway.
type Options struct {
	Backends []Backend
	// Client relays the requests; one without a timeout (responses
	// stream for as long as the model writes) when nil.
	Client *http.Client
	// Log receives one line per refused request kind and upstream error.
	Log zerolog.Logger
	// Now is the clock of the day budgets; time.Now when nil.
	Now func() time.Time
	// Observer receives the gateway's counters (/metrics); may be nil.
	Observer Observer
	// Prices are the models' prices, by model name (a dated release takes
	// the price of the longest name it begins with).
	Prices map[string]Price
	// AdminToken, when set, opens the grant API to the daemons that share
	// this gateway (`disinto gateway`); at least MinAdminToken characters.
	AdminToken string
	// TokenURL is where a subscription login is refreshed;
	// DefaultTokenURL when empty.
	TokenURL string
	// StateFile, when set, keeps the day tallies across restarts: a
	// shared gateway has no ledger to count them from.
	StateFile string
}

// Gateway relays the model requests of the runs it granted keys to.
// Create it with New; it is an http.Handler.
type Gateway struct {
	client   *http.Client
	log      zerolog.Logger
	backends map[string]*backend

	mu     sync.Mutex
	leases map[string]*Lease
	closed bool
	// refused remembers the request kinds already logged as refused.
	refused map[string]bool
	// days are the projects' tallies of the day, for their day budgets.
	days   map[string]*tally
	now    func() time.Time
	obs    Observer
	admin  string
	prices map[string]Price
	// stateFile keeps days; saveMu orders its writes.
	stateFile string
	saveMu    sync.Mutex
}

// backend is a Backend with its parsed URL and its concurrency bound.
type backend struct {
	Backend
	base  *url.URL
	slots chan struct{} // nil: unbounded
	login *loginFile
}

// New checks the backends and returns a gateway.
func New(o Options) (*Gateway, error) {
	g := &Gateway{client: o.Client, log: o.Log, backends: map[string]*backend{}, leases: map[string]*Lease{}, refused: map[string]bool{},
		days: map[string]*tally{}, now: o.Now, obs: o.Observer}
	if g.obs == nil {
		g.obs = nopObserver{}
	}
	if o.AdminToken != "" && len(o.AdminToken) < MinAdminToken {
		return nil, fmt.Errorf("gateway: the admin token is shorter than %d characters", MinAdminToken)
	}
	g.admin = o.AdminToken
	g.prices = o.Prices
	if g.stateFile = o.StateFile; g.stateFile != "" {
		if err := g.loadTallies(g.stateFile); err != nil {
			return nil, err
		}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.client == nil {
		g.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	for _, b := range o.Backends {
		if b.Name == "" {
			return nil, errors.New("gateway: a backend has no name")
		}
		if _, dup := g.backends[b.Name]; dup {
			return nil, fmt.Errorf("gateway: backend %s named twice", b.Name)
		}
		raw := b.URL
		if raw == "" {
			raw = DefaultUpstream
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("gateway: backend %s: base URL %q is not an http(s) URL", b.Name, raw)
		}
		be := &backend{Backend: b, base: u}
		if b.MaxConcurrent > 0 {
			be.slots = make(chan struct{}, b.MaxConcurrent)
		}
		if b.APIKey == "" && b.OAuthToken == "" && b.LoginFile != "" {
			be.login = &loginFile{path: b.LoginFile, tokenURL: cmp.Or(o.TokenURL, DefaultTokenURL), client: g.client, now: g.now}
		}
		g.backends[b.Name] = be
	}
	return g, nil
}

// Lease is one run's key and what its requests used. Close it when the
// run ends: the key stops working at once.
type Lease struct {
	// Key is what the run authenticates with (its ANTHROPIC_API_KEY).
	Key   string
	Grant Grant

	g      *Gateway
	mu     sync.Mutex
	usage  Usage
	closed bool
	// refused is the budget that stopped the run.
	refused error
}

// Open grants a new key for gr.
func (g *Gateway) Open(gr Grant) (*Lease, error) {
	if _, ok := g.backends[gr.Backend]; !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownBackend, gr.Backend)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("gateway: key: %w", err)
	}
	l := &Lease{Key: "dgw-" + hex.EncodeToString(b), Grant: gr, g: g}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if err := g.checkDayLocked(gr); err != nil {
		return nil, err
	}
	g.leases[l.Key] = l
	return l, nil
}

// Close revokes the key and returns what the run used.
func (l *Lease) Close() Usage {
	l.g.mu.Lock()
	delete(l.g.leases, l.Key)
	l.g.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.usage
}

// Usage is what the run used so far.
func (l *Lease) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage
}

func (l *Lease) record(u Usage) {
	l.g.obs.GatewayTokens(l.Grant.Project, l.Grant.Role, l.Grant.Backend, map[string]int64{
		"input": u.InputTokens, "output": u.OutputTokens, "cache_read": u.CacheRead, "cache_write": u.CacheCreation})
	l.g.obs.GatewayCost(l.Grant.Project, l.Grant.Role, l.Grant.Backend, u.CostUSD)
	l.mu.Lock()
	l.usage.add(u)
	l.mu.Unlock()
	l.g.mu.Lock()
	l.g.addLocked(l.Grant.Project, l.Grant.Role, dayOf(l.g.now(), l.Grant.TZ), u)
	l.g.mu.Unlock()
	l.g.saveTallies()
}

// Close revokes every key; later Opens fail.
func (g *Gateway) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	clear(g.leases)
}

// lease returns the open lease of the key a request carries.
func (g *Gateway) lease(r *http.Request) *Lease {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			key = strings.TrimSpace(v)
		}
	}
	if key == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leases[key]
}

// relayed are the requests the gateway relays: the model endpoints the
// CLI uses. Anything else is refused, not forwarded.
var relayed = map[string]bool{
	"POST /v1/messages":              true,
	"POST /v1/messages/count_tokens": true,
}

// ServeHTTP relays one request of a granted run.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.serveGrants(w, r) {
		return
	}
	kind := r.Method + " " + r.URL.Path
	if !relayed[kind] {
		g.refuse(kind)
		g.obs.GatewayRequest("-", "refused_endpoint")
		writeError(w, http.StatusNotFound, "not_found_error", "the model gateway relays only the messages endpoints")
		return
	}
	l := g.lease(r)
	if l == nil {
		g.obs.GatewayRequest("-", "refused_key")
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid or expired key: a key is good only while its run lives")
		return
	}
	if r.URL.Path == "/v1/messages" {
		if err := g.admit(l); err != nil {
			g.obs.GatewayRequest(l.Grant.Backend, "refused_budget")
			writeError(w, http.StatusBadRequest, "invalid_request_error", "budget exhausted: "+err.Error())
			return
		}
	}
	b := g.backends[l.Grant.Backend]
	if b.slots != nil {
		select {
		case b.slots <- struct{}{}:
			defer func() { <-b.slots }()
		case <-r.Context().Done():
			return
		}
	}
	g.relay(w, r, l, b)
}

// refuse logs a refused request kind once.
func (g *Gateway) refuse(kind string) {
	g.mu.Lock()
	first := !g.refused[kind]
	g.refused[kind] = true
	g.mu.Unlock()
	if first {
		g.log.Warn().Str("request", kind).Msg("model gateway: refused a request it does not relay")
	}
}

// writeError answers in the API's error shape, which the CLI shows.
func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, kind, msg)
}

// Observer receives the gateway's counters.
type Observer interface {
	// GatewayRequest counts a request: "relayed", or why not
	// ("refused_endpoint", "refused_key", "refused_budget",
	// "no_credential", "backend_error").
	GatewayRequest(backend, result string)
	// GatewayTokens counts what a relayed answer reported using.
	GatewayTokens(project, role, backend string, kinds map[string]int64)
	// GatewayCost counts what it cost, when its model is priced.
	GatewayCost(project, role, backend string, usd float64)
}

type nopObserver struct{}

func (nopObserver) GatewayRequest(string, string)                          {}
func (nopObserver) GatewayTokens(string, string, string, map[string]int64) {}
func (nopObserver) GatewayCost(string, string, string, float64)            {}
