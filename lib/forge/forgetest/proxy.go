package forgetest

import (
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Proxy is a reverse proxy in front of a server that counts requests per
// method and path and injects faults on demand: queued faults for the
// next requests (FailNext, DelayNext, RateLimitNext, ResetNext,
// TruncateNext), random ones from a seeded generator (SetChaos), and
// outages (SetDown refuses connections, SetHung accepts requests and never
// answers). Point a client's URL, git's included, at Proxy.URL.
type Proxy struct {
	// URL is the proxy's base URL.
	URL string

	addr string
	srv  *http.Server
	rp   *httputil.ReverseProxy

	mu     sync.Mutex
	counts map[string]int
	total  int
	faults []fault
	// pageCap, when set, lowers every "limit" above it, as a forge
	// configured with a smaller [api] MAX_RESPONSE_ITEMS does.
	pageCap  int
	ln       net.Listener // nil while down
	conns    map[net.Conn]bool
	hung     bool
	unhang   chan struct{}
	chaos    *chaos
	injected map[string]int
	observe  func(n int, r *http.Request)
	closed   bool
}

// fault is one injected misbehaviour; the zero value forwards.
type fault struct {
	status     int
	retryAfter time.Duration
	delay      time.Duration
	// reset forwards, then breaks the connection halfway through the
	// response body; truncate sends a well-formed response whose body is
	// cut in half.
	reset, truncate bool
}

// Names of injected faults, as Injected counts them.
const (
	InjectedStatus   = "status"
	InjectedDelay    = "delay"
	InjectedReset    = "reset"
	InjectedTruncate = "truncate"
	InjectedRefused  = "refused"
	InjectedHung     = "hung"
)

// NewProxy starts a proxy to target, closed when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target %q: %v", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{counts: map[string]int{}, conns: map[net.Conn]bool{}, injected: map[string]int{}, ln: ln, addr: ln.Addr().String()}
	p.URL = "http://" + p.addr
	p.rp = httputil.NewSingleHostReverseProxy(u)
	// A client that went away is not the proxy's error to log.
	p.rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ConnState: p.track, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(p.close)
	return p
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	f, ok, hung := p.record(r)
	if hung {
		p.hang(r)
		return
	}
	if ok {
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case f.status != 0:
			if f.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter/time.Second)))
			}
			http.Error(w, http.StatusText(f.status), f.status)
			return
		case f.reset, f.truncate:
			p.capLimit(r)
			p.mangle(w, r, f.reset)
			return
		}
	}
	p.capLimit(r)
	p.rp.ServeHTTP(w, r)
}

// CapPageSize makes the proxy lower any requested page size above n to n
// before forwarding, the way a forge whose [api] MAX_RESPONSE_ITEMS is n
// clamps it; the forge then computes its paging headers for n.
func (p *Proxy) CapPageSize(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pageCap = n
}

func (p *Proxy) capLimit(r *http.Request) {
	p.mu.Lock()
	limit := p.pageCap
	p.mu.Unlock()
	if limit <= 0 {
		return
	}
	q := r.URL.Query()
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > limit {
		q.Set("limit", strconv.Itoa(limit))
		r.URL.RawQuery = q.Encode()
	}
}

// record counts r and returns the fault to inject, if any, and whether
// the proxy is hung.
func (p *Proxy) record(r *http.Request) (fault, bool, bool) {
	p.mu.Lock()
	p.counts[r.Method+" "+r.URL.Path]++
	p.total++
	n, observe := p.total, p.observe
	p.mu.Unlock()
	if observe != nil {
		observe(n, r)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung {
		p.injected[InjectedHung]++
		return fault{}, false, true
	}
	if len(p.faults) > 0 {
		f := p.faults[0]
		p.faults = p.faults[1:]
		p.count(f)
		return f, true, false
	}
	if f, ok := p.chaos.pick(r); ok {
		p.count(f)
		return f, true, false
	}
	return fault{}, false, false
}

// count tallies an injected fault; p.mu is held.
func (p *Proxy) count(f fault) {
	switch {
	case f.reset:
		p.injected[InjectedReset]++
	case f.truncate:
		p.injected[InjectedTruncate]++
	case f.status != 0:
		p.injected[InjectedStatus]++
	case f.delay > 0:
		p.injected[InjectedDelay]++
	}
}

// FailNext answers the next n requests with status instead of forwarding.
func (p *Proxy) FailNext(n, status int) {
	p.add(n, fault{status: status})
}

// RateLimitNext answers the next n requests with 429 and Retry-After.
func (p *Proxy) RateLimitNext(n int, retryAfter time.Duration) {
	p.add(n, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// DelayNext holds the next n requests for d before forwarding them (or
// until the client gives up), to provoke client timeouts.
func (p *Proxy) DelayNext(n int, d time.Duration) {
	p.add(n, fault{delay: d})
}

// ResetNext forwards the next n requests, sends the status, headers and
// half of the body of each response, then resets the connection.
func (p *Proxy) ResetNext(n int) {
	p.add(n, fault{reset: true})
}

// TruncateNext forwards the next n requests and answers each with a
// complete HTTP response whose body is the first half of the real one:
// JSON that ends mid-value.
func (p *Proxy) TruncateNext(n int) {
	p.add(n, fault{truncate: true})
}

func (p *Proxy) add(n int, f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.faults = append(p.faults, f)
	}
}

// Observe calls fn with the running request count and each request before
// the proxy handles it (fn runs on the request's goroutine; nil stops
// observing), e.g. to act at a chosen point of a client's work.
func (p *Proxy) Observe(fn func(n int, r *http.Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.observe = fn
}

// Total returns the number of requests seen since the last Reset.
func (p *Proxy) Total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Counts returns requests per "METHOD /path" since the last Reset.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Injected returns how many faults of each kind (InjectedStatus, ...) the
// proxy injected since the last Reset.
func (p *Proxy) Injected() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.injected)
}

// Reset clears the counters and pending faults (not the chaos, an outage
// or a hang).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts, p.total, p.faults, p.injected = map[string]int{}, 0, nil, map[string]int{}
}
