package forgetest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Proxy is a reverse proxy in front of a server that counts requests per
// method and path and injects faults on demand. Point a client's URL at
// Proxy.URL.
type Proxy struct {
	// URL is the proxy's base URL.
	URL string

	mu     sync.Mutex
	counts map[string]int
	total  int
	faults []fault
	// pageCap, when set, lowers every "limit" above it, as a forge
	// configured with a smaller [api] MAX_RESPONSE_ITEMS does.
	pageCap int
}

type fault struct {
	status     int
	retryAfter time.Duration
	delay      time.Duration
}

// NewProxy starts a proxy to target, closed when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target %q: %v", target, err)
	}
	p := &Proxy{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := p.record(r)
		if ok {
			if f.delay > 0 {
				select {
				case <-time.After(f.delay):
				case <-r.Context().Done():
					return
				}
			}
			if f.status != 0 {
				if f.retryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter/time.Second)))
				}
				http.Error(w, http.StatusText(f.status), f.status)
				return
			}
		}
		p.capLimit(r)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
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

func (p *Proxy) record(r *http.Request) (fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[r.Method+" "+r.URL.Path]++
	p.total++
	if len(p.faults) == 0 {
		return fault{}, false
	}
	f := p.faults[0]
	p.faults = p.faults[1:]
	return f, true
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

func (p *Proxy) add(n int, f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.faults = append(p.faults, f)
	}
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
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Reset clears the counters and pending faults.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts, p.total, p.faults = map[string]int{}, 0, nil
}
