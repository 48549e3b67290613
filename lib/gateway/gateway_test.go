package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// upstream is a stand-in model API that records what reached it.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	hold     time.Duration
}

const sseBody = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"m1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":120,"output_tokens":1,"cache_read_input_tokens":30,"cache_creation_input_tokens":7}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"usage\""}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{},"usage":{"output_tokens":42}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for {
			m := u.maxSeen.Load()
			if n <= m || u.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		u.mu.Lock()
		u.requests = append(u.requests, r.Clone(r.Context()))
		u.mu.Unlock()
		time.Sleep(u.hold)
		if strings.Contains(r.URL.Path, "count_tokens") {
			_, _ = io.WriteString(w, `{"input_tokens":9}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, sseBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"m2","type":"message","model":"claude-haiku-4","content":[],"usage":{"input_tokens":11,"output_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		t.Fatal("nothing reached the backend")
	}
	return u.requests[len(u.requests)-1]
}

func (u *upstream) all() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.requests)
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

func newGateway(t testing.TB, bs ...Backend) (*Gateway, *httptest.Server) {
	g, err := New(Options{Backends: bs, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func post(t testing.TB, url, key, path, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestKeyIsGoodOnlyWhileItsRunLives: a run's key works until its lease is
// closed; an unknown key never does; the backend sees the real key only.
func TestKeyIsGoodOnlyWhileItsRunLives(t *testing.T) {
	up := newUpstream(t)
	const real = "sk-ant-api03-CANARY-real-key"
	g, srv := newGateway(t, Backend{Name: "anthropic", URL: up.URL, APIKey: real})
	l, err := g.Open(Grant{Project: "p", Role: "dev", Run: "dev-issue-1", Backend: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{"model":"m"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("granted key: %d %s", resp.StatusCode, body)
	}
	got := up.last(t)
	if got.Header.Get("X-Api-Key") != real || strings.Contains(fmt.Sprint(got.Header), l.Key) {
		t.Errorf("backend saw headers %v", got.Header)
	}
	if got.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("the API version header was not relayed: %v", got.Header)
	}
	l.Close()
	before := up.count()
	if resp, _ := post(t, srv.URL, l.Key, "/v1/messages", `{"model":"m"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("closed key: %d, want 401", resp.StatusCode)
	}
	if resp, _ := post(t, srv.URL, "sk-ant-api03-guess", "/v1/messages", `{}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown key: %d, want 401", resp.StatusCode)
	}
	if up.count() != before {
		t.Error("a request without a live key reached the backend")
	}
}

// TestOnlyModelEndpointsAreRelayed: anything but the messages endpoints
// is refused and never reaches the backend.
func TestOnlyModelEndpointsAreRelayed(t *testing.T) {
	up := newUpstream(t)
	g, srv := newGateway(t, Backend{Name: "anthropic", URL: up.URL, APIKey: "k"})
	l, _ := g.Open(Grant{Backend: "anthropic"})
	for _, path := range []string{"/v1/models", "/v1/complete", "/api/oauth/usage", "/v1/messages/batches", "/../v1/messages"} {
		if resp, _ := post(t, srv.URL, l.Key, path, `{}`); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/messages", nil)
	req.Header.Set("X-Api-Key", l.Key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/messages: %v %v", resp, err)
	}
	if up.count() != 0 {
		t.Errorf("%d refused requests reached the backend", up.count())
	}
	if resp, body := post(t, srv.URL, l.Key, "/v1/messages/count_tokens", `{}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "input_tokens") {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, body)
	}
}

// TestCredentials: each kind of backend gets its own credential, and a
// local backend none at all.
func TestCredentials(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	loginPath := filepath.Join(dir, ".credentials.json")
	if err := os.WriteFile(loginPath, []byte(`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-from-login","refreshToken":"sk-ant-ort01-x","expiresAt":4102444800000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g, srv := newGateway(t,
		Backend{Name: "key", URL: up.URL, APIKey: "sk-ant-api03-key"},
		Backend{Name: "oauth", URL: up.URL, OAuthToken: "sk-ant-oat01-token"},
		Backend{Name: "login", URL: up.URL, LoginFile: loginPath},
		Backend{Name: "local", URL: up.URL})
	for _, tc := range []struct {
		backend, apiKey, auth string
		beta                  bool
	}{
		{"key", "sk-ant-api03-key", "", false},
		{"oauth", "", "Bearer sk-ant-oat01-token", true},
		{"login", "", "Bearer sk-ant-oat01-from-login", true},
		{"local", "", "", false},
	} {
		l, err := g.Open(Grant{Backend: tc.backend})
		if err != nil {
			t.Fatal(err)
		}
		if resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.backend, resp.StatusCode, body)
		}
		h := up.last(t).Header
		beta := strings.Contains(strings.Join(h.Values("Anthropic-Beta"), ","), oauthBeta)
		if h.Get("X-Api-Key") != tc.apiKey || h.Get("Authorization") != tc.auth || beta != tc.beta {
			t.Errorf("%s: backend saw x-api-key %q, authorization %q, beta %v", tc.backend, h.Get("X-Api-Key"), h.Get("Authorization"), h.Values("Anthropic-Beta"))
		}
		l.Close()
	}
	// The login is read again when it changes on the host.
	if err := os.WriteFile(loginPath, []byte(`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-relogged-in"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, _ := g.Open(Grant{Backend: "login"})
	post(t, srv.URL, l.Key, "/v1/messages", `{}`)
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer sk-ant-oat01-relogged-in" {
		t.Errorf("after a new login: %q", got)
	}
	if _, err := g.Open(Grant{Backend: "nope"}); err == nil {
		t.Error("a key for an unknown backend")
	}
}

// TestMeteredFromTheWire: a run's usage is what the backend reported,
// streamed or not, summed over its requests.
func TestMeteredFromTheWire(t *testing.T) {
	up := newUpstream(t)
	g, err := New(Options{Backends: []Backend{{Name: "anthropic", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop(),
		Prices: map[string]Price{"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, "claude": {Input: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	l, _ := g.Open(Grant{Backend: "anthropic"})
	resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{"stream":true}`)
	if resp.StatusCode != http.StatusOK || body != sseBody {
		t.Fatalf("stream relayed as %d %q", resp.StatusCode, body)
	}
	// 120×3 + 42×15 + 30×0.3 + 7×3.75 per million: the dated release takes
	// the price of its longest priced prefix.
	if got, want := l.Usage(), (Usage{InputTokens: 120, OutputTokens: 42, CacheRead: 30, CacheCreation: 7, Requests: 1, CostUSD: 1025.25 / 1e6}); got != want {
		t.Errorf("streamed usage %+v, want %+v", got, want)
	}
	post(t, srv.URL, l.Key, "/v1/messages", `{"stream":false}`)
	post(t, srv.URL, l.Key, "/v1/messages/count_tokens", `{}`)
	// The haiku answer is priced by "claude": 11×1000 per million.
	if got, want := l.Close(), (Usage{InputTokens: 131, OutputTokens: 47, CacheRead: 33, CacheCreation: 9, Requests: 2, CostUSD: 1025.25/1e6 + 0.011}); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
}

// TestBackendConcurrencyHeld: a backend limited to one request at a time
// never sees two, whichever runs send them.
func TestBackendConcurrencyHeld(t *testing.T) {
	up := newUpstream(t)
	up.hold = 50 * time.Millisecond
	g, srv := newGateway(t, Backend{Name: "local", URL: up.URL, MaxConcurrent: 1})
	var wg sync.WaitGroup
	for i := range 4 {
		l, _ := g.Open(Grant{Run: fmt.Sprint(i), Backend: "local"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, srv.URL, l.Key, "/v1/messages", `{}`)
		}()
	}
	wg.Wait()
	if up.count() != 4 || up.maxSeen.Load() != 1 {
		t.Errorf("%d requests, at most %d at once; want 4, 1", up.count(), up.maxSeen.Load())
	}
}

func TestNewRefusesBadBackends(t *testing.T) {
	for _, bs := range [][]Backend{
		{{Name: ""}},
		{{Name: "a"}, {Name: "a"}},
		{{Name: "a", URL: "ftp://x"}},
		{{Name: "a", URL: "http://"}},
	} {
		if _, err := New(Options{Backends: bs}); err == nil {
			t.Errorf("accepted %+v", bs)
		}
	}
}

// BenchmarkRelay is the gateway's cost per relayed request on loopback:
// compare with BenchmarkDirect, the same request straight to the backend.
func BenchmarkRelay(b *testing.B) {
	up := newUpstream(b)
	g, err := New(Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	l, _ := g.Open(Grant{Backend: "a"})
	b.ResetTimer()
	for range b.N {
		post(b, srv.URL, l.Key, "/v1/messages", `{"stream":true}`)
	}
}

func BenchmarkDirect(b *testing.B) {
	up := newUpstream(b)
	b.ResetTimer()
	for range b.N {
		post(b, up.URL, "k", "/v1/messages", `{"stream":true}`)
	}
}

// TestBudgets: a run past its bound sends no more requests; a project
// past its day's gets no new run until the day rolls over; what the
// ledger recorded before a restart counts.
func TestBudgets(t *testing.T) {
	up := newUpstream(t)
	now := time.Date(2026, 12, 2, 22, 0, 0, 0, time.UTC)
	g, err := New(Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	const stream = `{"stream":true}` // 199 tokens a request

	run, _ := g.Open(Grant{Project: "p", Backend: "a", Limits: Limits{Run: Bound{Tokens: 150}}})
	if resp, _ := post(t, srv.URL, run.Key, "/v1/messages", stream); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request under the run budget: %d", resp.StatusCode)
	}
	resp, body := post(t, srv.URL, run.Key, "/v1/messages", stream)
	var be *BudgetError
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "budget exhausted") ||
		!errors.As(run.Refused(), &be) || be.Budget != "run" || be.Used != 199 || be.Unit != UnitTokens {
		t.Fatalf("past the run budget: %d %s, refused %v", resp.StatusCode, body, run.Refused())
	}
	if up.count() != 1 {
		t.Fatalf("%d requests reached the backend, want 1", up.count())
	}
	run.Close()

	day := Limits{Day: Bound{Tokens: 450}}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	a, err := g.Open(Grant{Project: "p", Backend: "a", Limits: day, TZ: berlin})
	if err != nil {
		t.Fatalf("under the day budget: %v", err)
	}
	post(t, srv.URL, a.Key, "/v1/messages", stream) // 398 today
	post(t, srv.URL, a.Key, "/v1/messages", stream) // 597: sent, as it was under the bound when asked
	if resp, _ := post(t, srv.URL, a.Key, "/v1/messages", stream); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("past the day budget: %d", resp.StatusCode)
	}
	a.Close()
	if _, err := g.Open(Grant{Project: "p", Backend: "a", Limits: day, TZ: berlin}); !errors.Is(err, ErrBudget) {
		t.Fatalf("a new run past the day budget: %v", err)
	}
	if _, err := g.Open(Grant{Project: "other", Backend: "a", Limits: day}); err != nil {
		t.Errorf("another project's day: %v", err)
	}
	now = now.Add(90 * time.Minute) // 23:30 UTC: a new day in Berlin
	if _, err := g.Open(Grant{Project: "p", Backend: "a", Limits: day, TZ: berlin}); err != nil {
		t.Errorf("after the day rolled over: %v", err)
	}
	g.Spent("q", "dev", now, nil, Usage{InputTokens: 500})
	if _, err := g.Open(Grant{Project: "q", Backend: "a", Limits: day}); !errors.Is(err, ErrBudget) {
		t.Errorf("tokens spent before a restart do not count: %v", err)
	}
	if got := g.DayUsed("q", "", nil).total(); got != 500 {
		t.Errorf("day used %d", got)
	}
}

type countingObserver struct {
	mu       sync.Mutex
	requests map[string]int
	tokens   map[string]int64
	cost     float64
}

func (o *countingObserver) GatewayRequest(backend, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[backend+"/"+result]++
}

func (o *countingObserver) GatewayCost(project, role, _ string, usd float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cost += usd
}

func (o *countingObserver) GatewayTokens(project, role, backend string, kinds map[string]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, n := range kinds {
		o.tokens[project+"/"+role+"/"+k] += n
	}
}

// TestObserved: /metrics hears of every request, relayed or refused, and
// of every token metered.
func TestObserved(t *testing.T) {
	up := newUpstream(t)
	o := &countingObserver{requests: map[string]int{}, tokens: map[string]int64{}}
	g, err := New(Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop(), Observer: o,
		Prices: map[string]Price{"claude-sonnet-4-5": {Input: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	l, _ := g.Open(Grant{Project: "p", Role: "dev", Backend: "a", Limits: Limits{Run: Bound{Tokens: 10}}})
	post(t, srv.URL, l.Key, "/v1/messages", `{"stream":true}`)
	post(t, srv.URL, l.Key, "/v1/messages", `{"stream":true}`)
	post(t, srv.URL, l.Key, "/v1/models", `{}`)
	post(t, srv.URL, "nope", "/v1/messages", `{}`)
	want := map[string]int{"a/relayed": 1, "a/refused_budget": 1, "-/refused_endpoint": 1, "-/refused_key": 1}
	if fmt.Sprint(o.requests) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", o.requests, want)
	}
	if o.tokens["p/dev/input"] != 120 || o.tokens["p/dev/output"] != 42 || o.tokens["p/dev/cache_read"] != 30 || o.tokens["p/dev/cache_write"] != 7 {
		t.Errorf("tokens %v", o.tokens)
	}
	if o.cost < 0.119 || o.cost > 0.121 {
		t.Errorf("cost $%v, want $0.12", o.cost)
	}
}

func TestPriceOf(t *testing.T) {
	g, _ := New(Options{Prices: map[string]Price{"claude-sonnet-4-5": {Input: 3}, "claude-sonnet": {Input: 2}}})
	for model, want := range map[string]float64{"claude-sonnet-4-5": 3, "claude-sonnet-4-5-20250929": 3, "claude-sonnet-4": 2, "qwen": -1, "": -1} {
		u := Usage{InputTokens: 1_000_000, Requests: 1}
		g.price(&u, model)
		if (want < 0 && u.Unpriced != 1) || (want >= 0 && (u.CostUSD != want || u.Unpriced != 0)) {
			t.Errorf("%q: %+v, want $%v", model, u, want)
		}
	}
}

// TestMoneyAndRoleBudgets: a bound in dollars holds like one in tokens,
// at the price table's prices; a role's own day budget stops that role
// on the project and no other.
func TestMoneyAndRoleBudgets(t *testing.T) {
	up := newUpstream(t)
	g, err := New(Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop(),
		Prices: map[string]Price{"claude-sonnet-4-5": {Input: 10_000}}}) // $1.20 a request
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	const stream = `{"stream":true}`

	run, _ := g.Open(Grant{Project: "p", Role: "dev", Backend: "a", Limits: Limits{Run: Bound{USD: 1}}})
	post(t, srv.URL, run.Key, "/v1/messages", stream)
	resp, body := post(t, srv.URL, run.Key, "/v1/messages", stream)
	var be *BudgetError
	if resp.StatusCode != http.StatusBadRequest || !errors.As(run.Refused(), &be) || be.Unit != UnitUSD ||
		!strings.Contains(body, "the run budget of p ($1.00) is spent: $1.20 used") {
		t.Fatalf("past the run's dollars: %d %s", resp.StatusCode, body)
	}
	run.Close()

	review := Limits{RoleDay: Bound{Tokens: 300}}
	r, _ := g.Open(Grant{Project: "p", Role: "review", Backend: "a", Limits: review})
	post(t, srv.URL, r.Key, "/v1/messages", stream) // 199
	post(t, srv.URL, r.Key, "/v1/messages", stream) // 398: under the bound when asked
	resp, body = post(t, srv.URL, r.Key, "/v1/messages", stream)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "the day budget of review on p (300 tokens) is spent: 398 used") {
		t.Fatalf("past the role's day: %d %s", resp.StatusCode, body)
	}
	r.Close()
	if _, err := g.Open(Grant{Project: "p", Role: "review", Backend: "a", Limits: review}); !errors.Is(err, ErrBudget) {
		t.Errorf("a new review run past its role's day: %v", err)
	}
	if _, err := g.Open(Grant{Project: "p", Role: "dev", Backend: "a", Limits: review}); err != nil {
		t.Errorf("dev on the same project: %v", err)
	}
	if _, err := g.Open(Grant{Project: "q", Role: "review", Backend: "a", Limits: review}); err != nil {
		t.Errorf("review on another project: %v", err)
	}
	if got := g.DayUsed("p", "", nil); got.total() != 597 || got.CostUSD < 3.59 || got.CostUSD > 3.61 || got.Requests != 3 {
		t.Errorf("the project's day: %+v", got)
	}
}

// TestStateFileKeepsTheDay: a gateway with a state file (a shared one,
// with no ledger) starts again with the day it had counted.
func TestStateFileKeepsTheDay(t *testing.T) {
	up := newUpstream(t)
	state := filepath.Join(t.TempDir(), "days.json")
	o := Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k"}}, Log: zerolog.Nop(), StateFile: state}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	l, _ := g.Open(Grant{Project: "p", Role: "dev", Backend: "a"})
	post(t, srv.URL, l.Key, "/v1/messages", `{"stream":true}`)
	l.Close()
	g.Close()

	again, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.DayUsed("p", "dev", nil).total(); got != 199 {
		t.Errorf("after a restart the role's day holds %d tokens, want 199", got)
	}
	if _, err := again.Open(Grant{Project: "p", Role: "dev", Backend: "a", Limits: Limits{Day: Bound{Tokens: 100}}}); !errors.Is(err, ErrBudget) {
		t.Errorf("the day spent before the restart does not count: %v", err)
	}
	if err := os.WriteFile(state, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), state) {
		t.Errorf("a broken state file: %v", err)
	}
}
