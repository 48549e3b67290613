package egress

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Results of a proxy request, as Observer counts them.
const (
	ResultAllowed         = "allowed"         // relayed
	ResultDenied          = "denied"          // the host is not in the project's allow list
	ResultRefused         = "refused"         // the host resolves to addresses the proxy never dials
	ResultFailed          = "failed"          // allowed, but resolving or connecting failed
	ResultUnauthenticated = "unauthenticated" // no or a wrong proxy credential
)

// Observer counts the proxy's requests (lib/metrics implements it).
type Observer interface {
	EgressRequest(project, result string)
}

// noProject is the identity of sessions that work for no project; no
// project name can take it (they begin with a letter or digit).
const noProject = "_"

// maxLogged bounds the hosts whose denial is remembered to log it once.
const maxLogged = 1000

// ProxyOptions configures a Proxy.
type ProxyOptions struct {
	// Allow are the allow list entries of each project.
	Allow map[string][]string
	// Resolve returns the addresses of host; default the system
	// resolver. The proxy dials only addresses it checked.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to a checked address ("ip:port"); default a
	// net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// DialTimeout bounds resolving and connecting; default 15s.
	DialTimeout time.Duration
	Observer    Observer
	Log         zerolog.Logger
}

// Proxy is the sessions' way to the hosts their projects allow: an HTTP
// proxy for CONNECT (HTTPS and anything else over a tunnel) and for plain
// HTTP. Each project's sessions authenticate as their project with a
// credential only the proxy can make, so one project's sessions cannot
// use another's list.
type Proxy struct {
	o      ProxyOptions
	allow  map[string]allowlist
	secret []byte
	fwd    *httputil.ReverseProxy
	srv    *http.Server

	mu     sync.Mutex
	addr   string
	logged map[string]bool
	tunnel map[net.Conn]struct{}
	closed bool
}

// NewProxy returns a proxy over o; it serves once Serve is called.
func NewProxy(o ProxyOptions) (*Proxy, error) {
	p := &Proxy{o: o, allow: map[string]allowlist{}, logged: map[string]bool{}, tunnel: map[net.Conn]struct{}{}, secret: make([]byte, 32)}
	for project, entries := range o.Allow {
		l, err := parseAllow(entries)
		if err != nil {
			return nil, fmt.Errorf("project %s: %w", project, err)
		}
		p.allow[project] = l
	}
	if _, err := rand.Read(p.secret); err != nil {
		return nil, err
	}
	if p.o.DialTimeout <= 0 {
		p.o.DialTimeout = 15 * time.Second
	}
	if p.o.Resolve == nil {
		p.o.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.o.Dial == nil {
		d := &net.Dialer{Timeout: p.o.DialTimeout}
		p.o.Dial = d.DialContext
	}
	p.fwd = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL = pr.In.URL; pr.Out.Host = pr.In.Host },
		// Never through another proxy of the environment: every
		// connection is one the proxy checked.
		Transport: &http.Transport{DialContext: p.dialChecked, Proxy: nil, ForceAttemptHTTP2: false,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: 5 * time.Minute},
		ModifyResponse: func(resp *http.Response) error {
			project, _ := resp.Request.Context().Value(projectKey{}).(string)
			p.count(project, ResultAllowed)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.fail(w, r, err)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	return p, nil
}

// Serve answers on ln until Close.
func (p *Proxy) Serve(ln net.Listener) {
	p.mu.Lock()
	p.addr = ln.Addr().String()
	p.mu.Unlock()
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.o.Log.Error().Err(err).Msg("egress proxy stopped")
		}
	}()
}

// Close stops serving and ends every tunnel.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnel {
		_ = c.Close()
	}
	p.mu.Unlock()
	return p.srv.Close()
}

// credential is the password of project's sessions.
func (p *Proxy) credential(project string) string {
	m := hmac.New(sha256.New, p.secret)
	m.Write([]byte(project))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// URL is the proxy as the sessions of project get it (HTTPS_PROXY and
// the like), with their credential; "" before Serve.
func (p *Proxy) URL(project string) string {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	if addr == "" {
		return ""
	}
	if project == "" {
		project = noProject
	}
	u := url.URL{Scheme: "http", User: url.UserPassword(project, p.credential(project)), Host: addr}
	return u.String()
}

// authenticate is the project the request's credential is for.
func (p *Proxy) authenticate(r *http.Request) (string, bool) {
	auth, ok := strings.CutPrefix(r.Header.Get("Proxy-Authorization"), "Basic ")
	if !ok {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth))
	if err != nil {
		return "", false
	}
	project, pass, ok := strings.Cut(string(raw), ":")
	if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(p.credential(project))) != 1 {
		return "", false
	}
	return project, true
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	project, ok := p.authenticate(r)
	if !ok {
		p.count("", ResultUnauthenticated)
		w.Header().Set("Proxy-Authenticate", `Basic realm="disinto egress"`)
		http.Error(w, "disinto egress proxy: proxy credentials required (the session's HTTPS_PROXY carries them)", http.StatusProxyAuthRequired)
		return
	}
	var hostport string
	switch {
	case r.Method == http.MethodConnect:
		hostport = r.Host
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		hostport = r.URL.Host
		if r.URL.Port() == "" {
			hostport = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	default:
		http.Error(w, "disinto egress proxy: send CONNECT host:port, or an absolute http:// URL", http.StatusBadRequest)
		return
	}
	host, portStr, err := net.SplitHostPort(hostport)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || port == 0 {
		http.Error(w, "disinto egress proxy: bad host:port "+strconv.Quote(hostport), http.StatusBadRequest)
		return
	}
	host = normalHost(host)
	if !p.allow[project].permits(host, uint16(port)) {
		p.deny(w, project, host, uint16(port))
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r, project, host, uint16(port))
		return
	}
	p.fwd.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), projectKey{}, project)))
}

type projectKey struct{}

// deny answers a host outside the project's list, logging it the first
// time for that project.
func (p *Proxy) deny(w http.ResponseWriter, project, host string, port uint16) {
	p.count(project, ResultDenied)
	p.logOnce(project, host, func(e *zerolog.Event) {
		e.Str("project", project).Str("host", host).Uint16("port", port).Msg("egress proxy: denied a host outside the project's [egress] allow list (logged once per host)")
	})
	http.Error(w, fmt.Sprintf("disinto egress proxy: %s:%d is not in the [egress] allow list of project %s", host, port, project), http.StatusForbidden)
}

func (p *Proxy) logOnce(project, host string, log func(*zerolog.Event)) {
	key := project + " " + host
	p.mu.Lock()
	first := !p.logged[key] && len(p.logged) < maxLogged
	if first {
		p.logged[key] = true
	}
	p.mu.Unlock()
	if first {
		log(p.o.Log.Warn())
	}
}

func (p *Proxy) count(project, result string) {
	if p.o.Observer != nil {
		p.o.Observer.EgressRequest(project, result)
	}
}

// refusedError is a host that resolved to no address the proxy dials.
type refusedError struct {
	host, why string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s resolves to %s addresses only, which the proxy never connects to", e.host, e.why)
}

// fail answers a request whose upstream could not be reached.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	project, _ := r.Context().Value(projectKey{}).(string)
	var ref *refusedError
	if errors.As(err, &ref) {
		p.count(project, ResultRefused)
		p.logOnce(project, ref.host, func(e *zerolog.Event) {
			e.Str("project", project).Str("host", ref.host).Str("why", ref.why).Msg("egress proxy: refused an allowed host that resolves to internal addresses only (logged once per host)")
		})
		http.Error(w, "disinto egress proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	p.count(project, ResultFailed)
	http.Error(w, "disinto egress proxy: "+err.Error(), http.StatusBadGateway)
}

// dialChecked resolves the host of address, drops every address the
// proxy never dials, and connects to the first of the rest that answers.
// The connection goes to an address checked here, not to whatever the
// name resolves to a second time.
func (p *Proxy) dialChecked(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = p.o.Resolve(ctx, host); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	local, err := localPrefixes()
	if err != nil {
		return nil, fmt.Errorf("list this host's networks: %w", err)
	}
	var dialErr error
	why := "no"
	for _, a := range addrs {
		if r := refusedAddr(a, local); r != "" {
			why = r
			continue
		}
		c, err := p.o.Dial(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), portStr))
		if err == nil {
			return c, nil
		}
		dialErr = err
	}
	if dialErr != nil {
		return nil, dialErr
	}
	return nil, &refusedError{host: host, why: why}
}

// connect answers CONNECT: a tunnel to the checked upstream.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, project, host string, port uint16) {
	r = r.WithContext(context.WithValue(r.Context(), projectKey{}, project))
	up, err := p.dialChecked(r.Context(), "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "disinto egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	p.count(project, ResultAllowed)
	if !p.track(client, up) {
		return
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		// What the client sent after its request line is already in buf.
		_, _ = io.Copy(up, buf)
		closeWrite(up)
		close(done)
	}()
	_, _ = io.Copy(client, up)
	closeWrite(client)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// track registers a tunnel's ends so that Close ends them; false when
// the proxy is closed already (and both are closed).
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.tunnel[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.tunnel, c)
	}
}
