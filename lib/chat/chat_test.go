package chat_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/chat"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

const testSecret = "edge-secret-0123456789"

// fakeForge is the forge's OAuth2 provider for fast tests: the code is
// the login, the token names it.
func fakeForge(t *testing.T) string {
	t.Helper()
	m := http.NewServeMux()
	m.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_secret") != "client-secret" || r.FormValue("code") == "bad" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "tok-" + r.FormValue("code")})
	})
	m.HandleFunc("GET /api/v1/user", func(w http.ResponseWriter, r *http.Request) {
		login, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token tok-")
		if !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"login": login})
	})
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv.URL
}

type fixture struct {
	srv    *chat.Server
	runner *claudetest.Scripted
	dir    string
	opts   chat.Options
}

// newFixture builds a server over a fake forge and a scripted runner that
// answers "answer N" with a session id of its own per conversation.
func newFixture(t *testing.T, mod func(*chat.Options)) *fixture {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: filepath.Join(t.TempDir(), "chat")}
	f.runner = &claudetest.Scripted{Script: func(_ context.Context, n int, inv claude.Invocation) (claude.Result, error) {
		sid := inv.ResumeID
		if sid == "" {
			sid = "00000000-0000-4000-8000-00000000000" + strconv.Itoa(n%10)
		}
		return claude.Result{SessionID: sid, Text: "answer " + strconv.Itoa(n), Subtype: "success", HasResult: true,
			Usage: claude.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}}
	forge := fakeForge(t)
	f.opts = chat.Options{DataDir: f.dir, ForgePublicURL: forge, ClientID: "client-id", ClientSecret: "client-secret",
		PublicURL: "http://edge.test", AllowedUsers: []string{"alice", "Bob"}, ForwardSecret: testSecret,
		Runner: f.runner, Sandbox: sb, SystemPrompt: func(u string) (string, error) { return "You help " + u + ".", nil },
		Log: zerolog.Nop()}
	if mod != nil {
		mod(&f.opts)
	}
	f.srv, err = chat.New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// do serves one request.
func (f *fixture) do(method, target string, body url.Values, h http.Header, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(method, target, strings.NewReader(body.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec
}

// login runs the OAuth flow for user and returns the session cookie (nil
// when none was set) and the callback's response.
func (f *fixture) login(t *testing.T, user string) (*http.Cookie, *httptest.ResponseRecorder) {
	t.Helper()
	start := f.do("GET", edge.LoginPath, nil, nil)
	if start.Code != http.StatusFound {
		t.Fatalf("login: %d", start.Code)
	}
	loc, _ := url.Parse(start.Header().Get("Location"))
	state := loc.Query().Get("state")
	if loc.Query().Get("redirect_uri") != "http://edge.test"+edge.CallbackPath || state == "" {
		t.Fatalf("authorize URL %s", loc)
	}
	stateC := cookie(start, "disinto_chat_state")
	cb := f.do("GET", edge.CallbackPath+"?"+url.Values{"code": {user}, "state": {state}}.Encode(), nil, nil, stateC)
	return cookie(cb, "disinto_chat_session"), cb
}

func cookie(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name && c.MaxAge >= 0 {
			return c
		}
	}
	return nil
}

// as is the header set of the edge for user, with the CSRF token when
// given.
func as(user, csrf string) http.Header {
	h := http.Header{edge.UserHeader: {user}}
	if csrf != "" {
		h.Set("X-CSRF-Token", csrf)
	}
	return h
}

// csrfOf reads the token off the page.
func (f *fixture) csrfOf(t *testing.T, user string, c *http.Cookie) string {
	t.Helper()
	page := f.do("GET", "/chat/", nil, as(user, ""), c)
	if page.Code != http.StatusOK {
		t.Fatalf("page: %d %s", page.Code, page.Body)
	}
	_, rest, _ := strings.Cut(page.Body.String(), `name="csrf-token" content="`)
	tok, _, _ := strings.Cut(rest, `"`)
	if tok == "" {
		t.Fatal("no CSRF token on the page")
	}
	return tok
}

// §3.8.1
func TestNoSessionRedirectsToLogin(t *testing.T) {
	f := newFixture(t, nil)
	rec := f.do("GET", "/chat/history", nil, nil)
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != edge.LoginPath {
		t.Fatalf("%d %s", rec.Code, rec.Header().Get("Location"))
	}
}

// §3.8.2
func TestForwardedUserMustMatchTheSession(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	if c == nil {
		t.Fatal("no session cookie")
	}
	for _, tc := range []struct {
		h    http.Header
		want int
	}{{nil, 403}, {as("bob", ""), 403}, {as("alice", ""), 200}} {
		if rec := f.do("GET", "/chat/history", nil, tc.h, c); rec.Code != tc.want {
			t.Errorf("header %v: %d, want %d", tc.h, rec.Code, tc.want)
		}
	}
}

// §3.8.3
func TestVerifyNeedsTheSecret(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	if rec := f.do("GET", edge.VerifyPath, nil, nil, c); rec.Code != http.StatusForbidden {
		t.Errorf("no secret: %d", rec.Code)
	}
	if rec := f.do("GET", edge.VerifyPath, nil, http.Header{edge.SecretHeader: {"wrong-secret-0123456"}}, c); rec.Code != http.StatusForbidden {
		t.Errorf("wrong secret: %d", rec.Code)
	}
	ok := f.do("GET", edge.VerifyPath, nil, http.Header{edge.SecretHeader: {testSecret}}, c)
	if ok.Code != http.StatusOK || ok.Header().Get(edge.UserHeader) != "alice" {
		t.Errorf("valid: %d %q", ok.Code, ok.Header().Get(edge.UserHeader))
	}
	if rec := f.do("GET", edge.VerifyPath, nil, http.Header{edge.SecretHeader: {testSecret}}); rec.Code != http.StatusUnauthorized ||
		!strings.Contains(rec.Body.String(), edge.LoginPath) {
		t.Errorf("no session: %d %s", rec.Code, rec.Body)
	}
	forged := &http.Cookie{Name: c.Name, Value: "eyJ1IjoiYm9iIiwiZSI6OTk5OTk5OTk5OTl9." + strings.SplitN(c.Value, ".", 2)[1]}
	if rec := f.do("GET", edge.VerifyPath, nil, http.Header{edge.SecretHeader: {testSecret}}, forged); rec.Code != http.StatusUnauthorized {
		t.Errorf("forged cookie: %d", rec.Code)
	}
}

func TestNoSecretNoServer(t *testing.T) {
	sb, _ := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "s")})
	_, err := chat.New(chat.Options{DataDir: t.TempDir(), ForgePublicURL: "http://f", ClientID: "a", ClientSecret: "b", PublicURL: "http://e",
		Runner: &claudetest.Scripted{}, Sandbox: sb, SystemPrompt: func(string) (string, error) { return "", nil }})
	if err == nil || !strings.Contains(err.Error(), edge.SecretEnv) {
		t.Fatalf("err = %v, want one naming %s", err, edge.SecretEnv)
	}
}

// §3.8.4
func TestCallbackStateIsSingleUse(t *testing.T) {
	f := newFixture(t, nil)
	if rec := f.do("GET", edge.CallbackPath+"?code=alice&state=nope", nil, nil); rec.Code != http.StatusBadRequest {
		t.Errorf("unknown state: %d", rec.Code)
	}
	start := f.do("GET", edge.LoginPath, nil, nil)
	loc, _ := url.Parse(start.Header().Get("Location"))
	target := edge.CallbackPath + "?" + url.Values{"code": {"alice"}, "state": {loc.Query().Get("state")}}.Encode()
	if rec := f.do("GET", target, nil, nil, cookie(start, "disinto_chat_state")); rec.Code != http.StatusFound {
		t.Fatalf("first callback: %d %s", rec.Code, rec.Body)
	}
	if rec := f.do("GET", target, nil, nil, cookie(start, "disinto_chat_state")); rec.Code != http.StatusBadRequest {
		t.Errorf("second callback: %d", rec.Code)
	}
	// A state started in another browser (no state cookie) is refused.
	start = f.do("GET", edge.LoginPath, nil, nil)
	loc, _ = url.Parse(start.Header().Get("Location"))
	if rec := f.do("GET", edge.CallbackPath+"?code=alice&state="+url.QueryEscape(loc.Query().Get("state")), nil, nil); rec.Code != http.StatusBadRequest {
		t.Errorf("callback without the state cookie: %d", rec.Code)
	}
}

// §3.8.5
func TestUserNotOnTheAllowlistIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	c, rec := f.login(t, "mallory")
	if rec.Code != http.StatusForbidden || c != nil {
		t.Fatalf("mallory: %d, cookie %v", rec.Code, c)
	}
	if _, rec := f.login(t, "BOB"); rec.Code != http.StatusFound {
		t.Errorf("the allowlist ignores case: %d", rec.Code)
	}
}

// §3.8.6, and the counters survive a restart.
func TestHourlyCapAndItsPersistence(t *testing.T) {
	f := newFixture(t, func(o *chat.Options) { o.Limits.PerHour = 2 })
	c, _ := f.login(t, "alice")
	tok := f.csrfOf(t, "alice", c)
	for i := range 2 {
		if rec := f.do("POST", "/chat", url.Values{"message": {"hi"}}, as("alice", tok), c); rec.Code != http.StatusOK {
			t.Fatalf("message %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := f.do("POST", "/chat", url.Values{"message": {"hi"}}, as("alice", tok), c)
	ra, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
	if rec.Code != http.StatusTooManyRequests || ra <= 0 {
		t.Fatalf("third: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	again, err := chat.New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = again
	if rec := f.do("POST", "/chat", url.Values{"message": {"hi"}}, as("alice", tok), c); rec.Code != http.StatusTooManyRequests {
		t.Errorf("after a restart: %d (session or counters lost)", rec.Code)
	}
}

// §3.8.7, and the second message resumes the first one's session.
func TestConversationFileAndResume(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	tok := f.csrfOf(t, "alice", c)
	rec := f.do("POST", "/chat", url.Values{"message": {"first question"}}, as("alice", tok), c)
	var a chat.Answer
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &a) != nil || a.Response != "answer 0" {
		t.Fatalf("first: %d %s", rec.Code, rec.Body)
	}
	rec = f.do("POST", "/chat", url.Values{"message": {"second"}, "conversation_id": {a.ConversationID}}, as("alice", tok), c)
	if rec.Code != 200 {
		t.Fatalf("second: %d %s", rec.Code, rec.Body)
	}
	calls := f.runner.Calls()
	if len(calls) != 2 || calls[0].ResumeID != "" || calls[1].ResumeID != "00000000-0000-4000-8000-000000000000" {
		t.Fatalf("resume ids %q %q", calls[0].ResumeID, calls[1].ResumeID)
	}
	if calls[0].Workspace == nil || calls[0].Dir != calls[1].Dir || calls[0].AppendSystemPrompt != "You help alice." || calls[0].Timeout <= 0 {
		t.Errorf("invocation %+v", calls[0])
	}
	file, err := os.Open(filepath.Join(f.dir, "history", "alice", a.ConversationID+".ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var roles []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var r map[string]string
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		ts, err := time.Parse(time.RFC3339Nano, r["ts"])
		if err != nil || ts.Location() != time.UTC || !strings.HasSuffix(r["ts"], "Z") {
			t.Errorf("ts %q is not ISO-8601 UTC", r["ts"])
		}
		roles = append(roles, r["role"])
	}
	if strings.Join(roles, " ") != "user assistant user assistant" {
		t.Errorf("roles %v", roles)
	}
	list := f.do("GET", "/chat/history", nil, as("alice", ""), c)
	if !strings.Contains(list.Body.String(), `"preview":"first question"`) || !strings.Contains(list.Body.String(), `"message_count":4`) {
		t.Errorf("listing %s", list.Body)
	}
}

// §3.8.8
func TestDotDotIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	for _, p := range []string{"/chat/history/../../etc", "/chat/history/%2e%2e/etc", "/chat/history/ABC"} {
		if rec := f.do("GET", p, nil, as("alice", ""), c); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
}

func TestStateChangesNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	tok := f.csrfOf(t, "alice", c)
	for _, h := range []http.Header{as("alice", ""), as("alice", "forged")} {
		if rec := f.do("POST", "/chat", url.Values{"message": {"hi"}}, h, c); rec.Code != http.StatusForbidden {
			t.Errorf("POST %v: %d", h, rec.Code)
		}
		if rec := f.do("DELETE", "/chat/history/0123456789ab", nil, h, c); rec.Code != http.StatusForbidden {
			t.Errorf("DELETE %v: %d", h, rec.Code)
		}
	}
	if n := len(f.runner.Calls()); n != 0 {
		t.Errorf("%d model runs without a token", n)
	}
	if rec := f.do("DELETE", "/chat/history/0123456789ab", nil, as("alice", tok), c); rec.Code != http.StatusNotFound {
		t.Errorf("DELETE with the token: %d", rec.Code)
	}
}

func TestMessageSizeLimit(t *testing.T) {
	f := newFixture(t, func(o *chat.Options) { o.MaxMessageBytes = 100 })
	c, _ := f.login(t, "alice")
	tok := f.csrfOf(t, "alice", c)
	if rec := f.do("POST", "/chat", url.Values{"message": {strings.Repeat("x", 101)}}, as("alice", tok), c); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("101 bytes: %d", rec.Code)
	}
	if rec := f.do("POST", "/chat", url.Values{"message": {strings.Repeat("%", 400)}}, as("alice", tok), c); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a large body: %d", rec.Code)
	}
	if rec := f.do("POST", "/chat", url.Values{"message": {" "}}, as("alice", tok), c); rec.Code != http.StatusBadRequest {
		t.Errorf("empty: %d", rec.Code)
	}
}

// §3.8.9: a slow answer holds a worker; another user's check is answered
// while it runs (the order of events proves it, not a clock).
func TestSlowAnswerBlocksNoCheck(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	f := newFixture(t, func(o *chat.Options) {
		o.Workers = 1
		o.Runner = &claudetest.Scripted{Script: func(ctx context.Context, _ int, _ claude.Invocation) (claude.Result, error) {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return claude.Result{SessionID: "00000000-0000-4000-8000-000000000009", Text: "slow", Subtype: "success", HasResult: true}, nil
		}}
	})
	ca, _ := f.login(t, "alice")
	cb, _ := f.login(t, "bob")
	tok := f.csrfOf(t, "alice", ca)
	var wg sync.WaitGroup
	wg.Add(1)
	var slow *httptest.ResponseRecorder
	go func() {
		defer wg.Done()
		slow = f.do("POST", "/chat", url.Values{"message": {"take your time"}}, as("alice", tok), ca)
	}()
	<-started
	rec := f.do("GET", edge.VerifyPath, nil, http.Header{edge.SecretHeader: {testSecret}}, cb)
	if rec.Code != http.StatusOK || rec.Header().Get(edge.UserHeader) != "bob" {
		t.Errorf("bob's check during alice's answer: %d", rec.Code)
	}
	close(release)
	wg.Wait()
	if slow.Code != http.StatusOK {
		t.Errorf("slow answer: %d", slow.Code)
	}
}

func TestSessionKeyIsPrivate(t *testing.T) {
	f := newFixture(t, nil)
	fi, err := os.Stat(filepath.Join(f.dir, "session.key"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("session key: %v %v", fi, err)
	}
	if fi, err := os.Stat(f.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v %v", fi, err)
	}
}

// A conversation handed out by POST /chat/new is the one the first
// message goes to.
func TestNewConversationID(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := f.login(t, "alice")
	tok := f.csrfOf(t, "alice", c)
	rec := f.do("POST", "/chat/new", nil, as("alice", tok), c)
	var n map[string]string
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &n) != nil || len(n["conversation_id"]) != 12 {
		t.Fatalf("new: %d %s", rec.Code, rec.Body)
	}
	rec = f.do("POST", "/chat", url.Values{"message": {"hi"}, "conversation_id": {n["conversation_id"]}}, as("alice", tok), c)
	var a chat.Answer
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &a) != nil || a.ConversationID != n["conversation_id"] {
		t.Errorf("first message went to %q, want %q", a.ConversationID, n["conversation_id"])
	}
	if got := f.do("GET", "/chat/history/"+a.ConversationID, nil, as("alice", ""), c); got.Code != 200 {
		t.Errorf("history: %d", got.Code)
	}
	if got := f.do("DELETE", "/chat/history/"+a.ConversationID, nil, as("alice", tok), c); got.Code != http.StatusNoContent {
		t.Errorf("delete: %d", got.Code)
	}
	if got := f.do("GET", "/chat/history/"+a.ConversationID, nil, as("alice", ""), c); got.Code != http.StatusNotFound {
		t.Errorf("history after delete: %d", got.Code)
	}
}
