package edge_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/chat"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/edge/edgetest"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

const (
	proxySecret = "proxy-secret-0123456789"
	statusToken = "status-token-0123456789"
)

// seen records what an upstream received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// last returns the last request to a path.
func (s *seen) last(path string) *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.reqs) - 1; i >= 0; i-- {
		if s.reqs[i].URL.Path == path {
			return s.reqs[i]
		}
	}
	return nil
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func hostPort(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// stack is the edge in front of a forge stand-in (its OAuth2 provider
// too), a status page stand-in and the real chat.
type stack struct {
	url           string
	forge, status *seen
	chat          *seen
	client        *http.Client
	forgeURL      string
}

func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackWith(t, statusToken)
}

// startStackWith is startStack with the edge's status token token (""
// leaves it unset), and the edge's configuration changed by mods.
func startStackWith(t *testing.T, token string, mods ...func(*edge.Config)) *stack {
	t.Helper()
	st := &stack{forge: &seen{}, status: &seen{}, chat: &seen{}}
	fm := http.NewServeMux()
	fm.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "tok-" + r.FormValue("code")})
	})
	fm.HandleFunc("GET /api/v1/user", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"login": strings.TrimPrefix(r.Header.Get("Authorization"), "token tok-")})
	})
	fm.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "forge page "+r.URL.Path) })
	forge := httptest.NewServer(st.forge.wrap(fm))
	t.Cleanup(forge.Close)
	st.forgeURL = forge.URL

	status := httptest.NewServer(st.status.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+statusToken {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "status page "+r.URL.Path)
	})))
	t.Cleanup(status.Close)

	port := edgetest.FreePort(t)
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	runner := &claudetest.Scripted{Script: func(_ context.Context, n int, inv claude.Invocation) (claude.Result, error) {
		return claude.Result{SessionID: "00000000-0000-4000-8000-00000000000" + strconv.Itoa(n%10), Text: "echo: " + inv.Prompt,
			Subtype: "success", HasResult: true}, nil
	}}
	srv, err := chat.New(chat.Options{DataDir: t.TempDir(), ForgePublicURL: forge.URL, ClientID: "id", ClientSecret: "secret",
		PublicURL: "http://127.0.0.1:" + strconv.Itoa(port), AllowedUsers: []string{"alice"}, ForwardSecret: proxySecret,
		Runner: runner, Sandbox: sb, SystemPrompt: func(string) (string, error) { return "", nil }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: st.chat.wrap(srv)}}
	cs.Start()
	t.Cleanup(cs.Close)

	c := edge.Config{Port: port, Admin: "off", Forge: hostPort(t, forge.URL), Status: hostPort(t, status.URL), Chat: hostPort(t, cs.URL)}
	for _, m := range mods {
		m(&c)
	}
	st.url = edgetest.Start(t, c, proxySecret, token)
	st.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return st
}

func (st *stack) get(t *testing.T, path string, h http.Header) *http.Response {
	t.Helper()
	return st.do(t, "GET", path, nil, h)
}

func (st *stack) do(t *testing.T, method, path string, body url.Values, h http.Header) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequest(method, st.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := st.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func text(t *testing.T, resp *http.Response) string {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// login logs alice in through the edge and returns her cookie header.
func (st *stack) login(t *testing.T) string {
	t.Helper()
	start := st.get(t, edge.LoginPath, nil)
	loc, err := url.Parse(start.Header.Get("Location"))
	if start.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), st.forgeURL+"/login/oauth/authorize?") {
		t.Fatalf("login through the edge: %d %s", start.StatusCode, start.Header.Get("Location"))
	}
	var stateC string
	for _, c := range start.Cookies() {
		stateC = c.Name + "=" + c.Value
	}
	cb := st.get(t, edge.CallbackPath+"?"+url.Values{"code": {"alice"}, "state": {loc.Query().Get("state")}}.Encode(), http.Header{"Cookie": {stateC}})
	for _, c := range cb.Cookies() {
		if c.Name == "disinto_chat_session" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("callback through the edge: %d, no session cookie", cb.StatusCode)
	return ""
}

// TestProxyRoutes covers the routes of spec 95 §2.3 through the real
// Caddy: the forge at /, the checks failing closed without a session,
// the forwarded user, a POST to the bare /chat, and the status page.
func TestProxyRoutes(t *testing.T) {
	st := startStack(t)

	if resp := st.get(t, "/", nil); resp.StatusCode != 200 || text(t, resp) != "forge page /" {
		t.Errorf("GET / did not reach the forge: %d", resp.StatusCode)
	}
	if resp := st.get(t, "/acme/widget/issues", nil); resp.StatusCode != 200 {
		t.Errorf("a forge page: %d", resp.StatusCode)
	}
	for _, p := range []string{"/chat/", "/chat", "/chat/history", "/factory/"} {
		resp := st.get(t, p, http.Header{edge.UserHeader: {"alice"}})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(text(t, resp), edge.LoginPath) {
			t.Errorf("GET %s without a session: %d, want the check's 401", p, resp.StatusCode)
		}
	}
	if r := st.status.last("/"); r != nil {
		t.Error("the status page was reached without a session")
	}

	cookie := st.login(t)
	resp := st.get(t, "/chat/history", http.Header{"Cookie": {cookie}, edge.UserHeader: {"mallory"}})
	if resp.StatusCode != 200 {
		t.Fatalf("GET /chat/history with a session: %d %s", resp.StatusCode, text(t, resp))
	}
	if r := st.chat.last("/chat/history"); r == nil || r.Header.Get(edge.UserHeader) != "alice" || r.Header.Get(edge.SecretHeader) != "" {
		t.Errorf("the chat got %v", r.Header)
	}
	page := text(t, st.get(t, "/chat/", http.Header{"Cookie": {cookie}}))
	_, rest, _ := strings.Cut(page, `name="csrf-token" content="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	post := st.do(t, "POST", "/chat", url.Values{"message": {"hello edge"}}, http.Header{"Cookie": {cookie}, "X-Csrf-Token": {csrf}})
	var a chat.Answer
	if body := text(t, post); post.StatusCode != 200 || json.Unmarshal([]byte(body), &a) != nil || a.Response != "echo: hello edge" {
		t.Errorf("POST /chat through the edge: %d %s", post.StatusCode, body)
	}
	if post := st.do(t, "POST", "/chat", url.Values{"message": {"no token"}}, http.Header{"Cookie": {cookie}}); post.StatusCode != http.StatusForbidden {
		t.Errorf("POST /chat without the CSRF token: %d", post.StatusCode)
	}

	for _, p := range []string{"/factory/", "/factory"} {
		resp := st.get(t, p, http.Header{"Cookie": {cookie}})
		if body := text(t, resp); resp.StatusCode != 200 || body != "status page /" {
			t.Errorf("GET %s with a session: %d %q", p, resp.StatusCode, body)
		}
	}
	for _, r := range append(st.status.all(), st.forge.all()...) {
		if r.Header.Get(edge.SecretHeader) != "" {
			t.Errorf("%s %s upstream got the forward-auth secret", r.Method, r.URL.Path)
		}
	}
}

// disabled checks that the edge answers path itself with the disabled
// route's 503, its text naming want.
func (st *stack) disabled(t *testing.T, method, path, want string) {
	t.Helper()
	resp := st.do(t, method, path, nil, nil)
	body := text(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "not configured: set "+want) ||
		!strings.Contains(resp.Header.Get(edge.DisabledHeader), want) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("%s %s: %d %q (%s: %q), want the 503 naming %s", method, path, resp.StatusCode, body,
			edge.DisabledHeader, resp.Header.Get(edge.DisabledHeader), want)
	}
}

// TestProxyWithoutSecret is spec 95 §1.6 scenario 4 through the real
// Caddy: with no forward-auth secret the edge starts and serves the
// forge, and the chat's routes and the status page answer 503 naming the
// secret without reaching their upstreams.
func TestProxyWithoutSecret(t *testing.T) {
	forge, status, chatUp := &seen{}, &seen{}, &seen{}
	up := func(s *seen, name string) string {
		srv := httptest.NewServer(s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.URL.Path)
		})))
		t.Cleanup(srv.Close)
		return hostPort(t, srv.URL)
	}
	cfg := edge.Config{Port: edgetest.FreePort(t), Admin: "off", Forge: up(forge, "forge page"), Status: up(status, "status page"),
		Chat: up(chatUp, "chat")}
	st := &stack{url: edgetest.Start(t, cfg, "", statusToken), client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}

	for _, p := range []string{"/", "/acme/widget/issues", "/chatroom"} {
		if resp := st.get(t, p, nil); resp.StatusCode != 200 || text(t, resp) != "forge page "+p {
			t.Errorf("GET %s did not reach the forge: %d", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/chat/", "/chat", "/chat/history", edge.LoginPath, edge.CallbackPath + "?code=x&state=y", "/factory/", "/factory"} {
		st.disabled(t, "GET", p, edge.SecretEnv)
	}
	st.disabled(t, "POST", "/chat", edge.SecretEnv)
	if n := len(chatUp.all()) + len(status.all()); n != 0 {
		t.Errorf("disabled routes reached their upstreams %d times", n)
	}
}

// TestProxyWithoutStatusToken: with no status token the chat works
// through the edge as ever, and only the status page answers 503 naming
// the token, even with a session.
func TestProxyWithoutStatusToken(t *testing.T) {
	st := startStackWith(t, "")
	if resp := st.get(t, "/", nil); resp.StatusCode != 200 {
		t.Errorf("GET / did not reach the forge: %d", resp.StatusCode)
	}
	if resp := st.get(t, "/chat/", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /chat/ without a session: %d, want the check's 401", resp.StatusCode)
	}
	cookie := st.login(t)
	if resp := st.get(t, "/chat/history", http.Header{"Cookie": {cookie}}); resp.StatusCode != 200 {
		t.Errorf("GET /chat/history with a session: %d", resp.StatusCode)
	}
	st.disabled(t, "GET", "/factory/", edge.StatusTokenEnv)
	resp := st.get(t, "/factory/", http.Header{"Cookie": {cookie}})
	if body := text(t, resp); resp.StatusCode != http.StatusServiceUnavailable || body != "the status page is not configured: set "+edge.StatusTokenEnv {
		t.Errorf("GET /factory/ with a session: %d %q", resp.StatusCode, body)
	}
	if n := len(st.status.all()); n != 0 {
		t.Errorf("the status page was reached %d times without its token", n)
	}
}
