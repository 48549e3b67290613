package forgetest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"
)

// InjectedOutage counts the connections an outage (SetDown) cut.
const InjectedOutage = "outage"

// Chaos makes a random share of the requests misbehave. The shares are
// drawn from a generator seeded with Seed, so a failing run can be
// repeated; each share is a probability in [0, 1], and together they
// should not exceed 1.
type Chaos struct {
	Seed int64
	// FailRate is the share answered with FailStatus (default 500).
	FailRate   float64
	FailStatus int
	// DelayRate is the share held for Delay before being forwarded.
	DelayRate float64
	Delay     time.Duration
	// ResetRate is the share whose connection is reset mid-body.
	ResetRate float64
	// TruncateRate is the share answered with half of the body.
	TruncateRate float64
	// Match, when set, limits the chaos to the requests it accepts.
	Match func(*http.Request) bool
}

type chaos struct {
	Chaos
	rnd *rand.Rand
}

// SetChaos replaces the random faults; the zero Chaos turns them off.
// Queued faults (FailNext, ...) still come first.
func (p *Proxy) SetChaos(c Chaos) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.FailRate+c.DelayRate+c.ResetRate+c.TruncateRate <= 0 {
		p.chaos = nil
		return
	}
	if c.FailStatus == 0 {
		c.FailStatus = http.StatusInternalServerError
	}
	seed := uint64(c.Seed)
	p.chaos = &chaos{Chaos: c, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// pick draws the fault for r; the caller holds the proxy's lock.
func (c *chaos) pick(r *http.Request) (fault, bool) {
	if c == nil || (c.Match != nil && !c.Match(r)) {
		return fault{}, false
	}
	x := c.rnd.Float64()
	for _, o := range []struct {
		rate float64
		f    fault
	}{
		{c.FailRate, fault{status: c.FailStatus}},
		{c.DelayRate, fault{delay: c.Delay}},
		{c.ResetRate, fault{reset: true}},
		{c.TruncateRate, fault{truncate: true}},
	} {
		if x < o.rate {
			return o.f, true
		}
		x -= o.rate
	}
	return fault{}, false
}

// SetDown starts (true) or ends (false) an outage: while down the proxy
// listens on nothing, so connecting is refused, and every connection open
// when it went down is cut, requests in flight included.
func (p *Proxy) SetDown(down bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("proxy closed")
	}
	switch {
	case down && p.ln != nil:
		err := p.ln.Close()
		p.ln = nil
		for c := range p.conns {
			_ = c.Close()
			p.injected[InjectedOutage]++
		}
		return err
	case !down && p.ln == nil:
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("proxy back on %s: %w", p.addr, err)
		}
		p.ln = ln
		go func() { _ = p.srv.Serve(ln) }()
	}
	return nil
}

// SetHung makes the proxy stop answering (true): every request, new or
// already waiting, is accepted and held without a byte of response until
// its client gives up or the hang ends (false), when the held requests'
// connections are closed without an answer.
func (p *Proxy) SetHung(hung bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case hung && !p.hung:
		p.hung, p.unhang = true, make(chan struct{})
	case !hung && p.hung:
		p.hung = false
		close(p.unhang)
	}
}

// hang holds r while the proxy is hung.
func (p *Proxy) hang(r *http.Request) {
	p.mu.Lock()
	ch := p.unhang
	p.mu.Unlock()
	select {
	case <-ch:
	case <-r.Context().Done():
	}
	// No answer at all: the connection closes without a response.
	panic(http.ErrAbortHandler)
}

// mangle forwards r and spoils the response: reset cuts the connection
// halfway through the body, otherwise the body is cut in half behind an
// honest Content-Length.
func (p *Proxy) mangle(w http.ResponseWriter, r *http.Request, reset bool) {
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	half := body[:len(body)/2]
	hdr := rec.Header().Clone()
	hdr.Del("Transfer-Encoding")
	if !reset {
		hdr.Set("Content-Length", strconv.Itoa(len(half)))
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(half)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", rec.Code, http.StatusText(rec.Code))
	_ = hdr.Write(buf)
	_, _ = buf.WriteString("\r\n")
	_, _ = buf.Write(half)
	_ = buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
	_ = conn.Close()
}

// track keeps the set of open client connections, for SetDown.
func (p *Proxy) track(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		p.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

func (p *Proxy) close() {
	p.SetHung(false)
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.mu.Unlock()
	_ = p.srv.Close()
}
