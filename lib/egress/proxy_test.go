package egress_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/egress"
)

// counts is an Observer that keeps what it was told.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) EgressRequest(project, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[project+"/"+result]++
}

func (c *counts) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// public stands for an internet host: names resolve to it, and dialling
// it reaches the test's servers.
var public = netip.MustParseAddr("198.51.100.7")

// proxyWorld is a proxy whose resolver and dialler stand in for DNS and
// the internet: every name of names resolves to its addresses, and a
// dial of public:80 or public:443 reaches the plain or the TLS server.
type proxyWorld struct {
	proxy  *egress.Proxy
	obs    *counts
	logs   *bytes.Buffer
	mu     sync.Mutex
	dialed []string
	// leaked are Proxy-Authorization headers the upstream received.
	leaked []string
}

func newProxyWorld(t *testing.T, allow map[string][]string) *proxyWorld {
	w := &proxyWorld{obs: &counts{}, logs: &bytes.Buffer{}}
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Proxy-Authorization"); h != "" {
			w.mu.Lock()
			w.leaked = append(w.leaked, h)
			w.mu.Unlock()
		}
		_, _ = io.WriteString(rw, "upstream "+r.Host+r.URL.Path)
	})
	plain, secure := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	names := map[string][]netip.Addr{
		"allowed.example":  {public},
		"denied.example":   {public},
		"a.cdn.example":    {public},
		"git.example":      {public},
		"rebind.example":   {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("::1")},
		"mixed.example":    {netip.MustParseAddr("127.0.0.1"), public},
		"forgejo.internal": {netip.MustParseAddr("172.18.0.2")},
	}
	var err error
	w.proxy, err = egress.NewProxy(egress.ProxyOptions{
		Allow:    allow,
		Observer: w.obs,
		Log:      zerolog.New(w.logs),
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return a, nil
			}
			return nil, errors.New("no such host")
		},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			w.mu.Lock()
			w.dialed = append(w.dialed, address)
			w.mu.Unlock()
			target := map[string]string{
				net.JoinHostPort(public.String(), "80"):   plain.Listener.Addr().String(),
				net.JoinHostPort(public.String(), "443"):  secure.Listener.Addr().String(),
				net.JoinHostPort(public.String(), "2222"): plain.Listener.Addr().String(),
			}[address]
			if target == "" {
				return nil, errors.New("unreachable " + address)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, target)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.proxy.Serve(ln)
	t.Cleanup(func() { _ = w.proxy.Close() })
	return w
}

// client is an HTTP client of project's sessions: through the proxy URL
// they are given, trusting any certificate (the test's TLS server has
// its own).
func (w *proxyWorld) client(proxyURL string) *http.Client {
	u, _ := url.Parse(proxyURL)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func get(t *testing.T, c *http.Client, target string) (int, string) {
	t.Helper()
	resp, err := c.Get(target)
	if err != nil {
		// A refused CONNECT surfaces as an error carrying the status.
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProxy: a project's sessions reach the hosts of its list over
// HTTPS (CONNECT) and plain HTTP, nothing else; the proxy never dials an
// internal address, whatever a name resolves to; every refusal is
// counted and each denied host logged once.
func TestProxy(t *testing.T) {
	w := newProxyWorld(t, map[string][]string{
		"proj":  {"allowed.example", "*.cdn.example", "git.example:2222", "rebind.example", "mixed.example", "forgejo.internal"},
		"other": {"denied.example"},
	})
	c := w.client(w.proxy.URL("proj"))

	if code, body := get(t, c, "https://allowed.example/mod"); code != 200 || body != "upstream allowed.example/mod" {
		t.Errorf("HTTPS to an allowed host: %d %q", code, body)
	}
	if code, body := get(t, c, "http://allowed.example/plain"); code != 200 || body != "upstream allowed.example/plain" {
		t.Errorf("HTTP to an allowed host: %d %q", code, body)
	}
	w.mu.Lock()
	if len(w.leaked) > 0 {
		t.Error("the proxy credential reached the upstream")
	}
	w.mu.Unlock()
	if code, _ := get(t, c, "https://a.cdn.example/x"); code != 200 {
		t.Errorf("a name under an allowed *.domain: %d", code)
	}
	if code, _ := get(t, c, "http://git.example:2222/x"); code != 200 {
		t.Errorf("an allowed host:port: %d", code)
	}
	if got := w.obs.get("proj/allowed"); got != 4 {
		t.Errorf("allowed counted %d times, want 4", got)
	}

	for _, target := range []string{"https://denied.example/", "https://denied.example/again", "http://denied.example/",
		"https://cdn.example/", "https://git.example/", "http://allowed.example:8080/", "https://198.51.100.7/"} {
		if code, body := get(t, c, target); code == 200 {
			t.Errorf("%s: relayed: %s", target, body)
		}
	}
	if got := w.obs.get("proj/denied"); got != 7 {
		t.Errorf("denied counted %d times, want 7", got)
	}
	if n := strings.Count(w.logs.String(), `"host":"denied.example"`); n != 1 {
		t.Errorf("denied.example logged %d times, want once:\n%s", n, w.logs)
	}
	if code, body := get(t, c, "http://denied.example/"); code != http.StatusForbidden || !strings.Contains(body, "allow list of project proj") {
		t.Errorf("a denial says why: %d %q", code, body)
	}

	// Allowed names that resolve to internal addresses only: refused,
	// and nothing internal is dialled; a name with a public address too
	// gets only that one.
	w.mu.Lock()
	w.dialed = nil
	w.mu.Unlock()
	for _, target := range []string{"https://rebind.example/", "http://rebind.example/", "http://forgejo.internal/"} {
		if code, body := get(t, c, target); code == 200 {
			t.Errorf("%s relayed: %s", target, body)
		}
	}
	if got := w.obs.get("proj/refused"); got != 3 {
		t.Errorf("refused counted %d times, want 3", got)
	}
	if code, _ := get(t, c, "https://mixed.example/"); code != 200 {
		t.Errorf("a name with a public address: %d", code)
	}
	w.mu.Lock()
	if len(w.dialed) != 1 || w.dialed[0] != "198.51.100.7:443" {
		t.Errorf("dialled %v, want only the public address", w.dialed)
	}
	w.mu.Unlock()

	// Another project's credential gets that project's list only; no
	// credential, or a forged one, gets nothing.
	if code, _ := get(t, w.client(w.proxy.URL("other")), "https://allowed.example/"); code == 200 {
		t.Error("project other used proj's list")
	}
	if code, _ := get(t, w.client(w.proxy.URL("other")), "http://denied.example/"); code != 200 {
		t.Errorf("project other to its own host: %d", code)
	}
	forged, _ := url.Parse(w.proxy.URL("other"))
	pass, _ := forged.User.Password()
	forged.User = url.UserPassword("proj", pass)
	noCred, _ := url.Parse(w.proxy.URL("proj"))
	noCred.User = nil
	for name, u := range map[string]string{"forged": forged.String(), "none": noCred.String()} {
		if code, _ := get(t, w.client(u), "http://allowed.example/"); code != http.StatusProxyAuthRequired {
			t.Errorf("%s credential: %d, want 407", name, code)
		}
	}
	if got := w.obs.get("/unauthenticated"); got != 2 {
		t.Errorf("unauthenticated counted %d times, want 2", got)
	}
}

// TestProxyAllowSyntax: the proxy and lib/config, which reports a bad
// entry with its file and line, agree on what an entry is.
func TestProxyAllowSyntax(t *testing.T) {
	loads := func(entry string) bool {
		_, err := config.Parse(map[string][]byte{"p.toml": []byte("name = \"p\"\nrepo = \"o/p\"\n[egress]\nallow = [" + strconv.Quote(entry) + "]\n")}, config.NewEnv(nil))
		return err == nil
	}
	for _, bad := range []string{"", "localhost", "10.0.0.1", "http://x.example", "x.example/path", "*.", "*x.example", "X.example", "x.example:0", "x.example:99999", "a.*.example", "x.example."} {
		if _, err := egress.NewProxy(egress.ProxyOptions{Allow: map[string][]string{"p": {bad}}}); err == nil {
			t.Errorf("%q accepted", bad)
		}
		if loads(bad) {
			t.Errorf("%q accepted by lib/config", bad)
		}
	}
	for _, good := range []string{"proxy.golang.org", "*.npmjs.org", "git.example.com:2222"} {
		if _, err := egress.NewProxy(egress.ProxyOptions{Allow: map[string][]string{"p": {good}}}); err != nil {
			t.Error(err)
		}
		if !loads(good) {
			t.Errorf("%q refused by lib/config", good)
		}
	}
}

// TestMinSessionUIDMatchesConfig: every session pool lib/config accepts
// lies at or above the bound the firewall trusts a local server's answer
// from, and the bound itself is a pool lib/config accepts.
func TestMinSessionUIDMatchesConfig(t *testing.T) {
	for base, ok := range map[int]bool{egress.MinSessionUID - 1: false, egress.MinSessionUID: true} {
		_, err := config.Parse(map[string][]byte{"p.toml": []byte("name = \"p\"\nrepo = \"o/p\"\n")},
			config.NewEnv(map[string]string{"DISINTO_SESSION_UID_BASE": strconv.Itoa(base)}))
		if (err == nil) != ok {
			t.Errorf("pool from %d: %v", base, err)
		}
	}
}
