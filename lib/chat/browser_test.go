package chat_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/chat"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/edge/edgetest"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// chromium is Debian's chromium (tests/setup/chromium.sh), or
// $DISINTO_CHROMIUM.
func chromium(t *testing.T) string {
	bin := os.Getenv("DISINTO_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("chromium not installed (%v): run tests/setup/chromium.sh", err)
	}
	return bin
}

// browser returns a fresh headless browser context (its own profile, so
// its own cookies) for the test.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	// The test forge is built without its front-end assets, and its pages
	// alert() when a script is missing: a modal dialog would hold every
	// page's load forever.
	if err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.alert = function () {};"})
		return err
	})); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// recorder is the forge's internal address: a reverse proxy that notes
// every path the chat asked for there.
type recorder struct {
	mu    sync.Mutex
	paths []string
}

func (rc *recorder) has(prefix string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, p := range rc.paths {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// waitFor evaluates expr (a string expression) until it is non-empty,
// across the navigations under way, for at most d.
func waitFor(t *testing.T, bctx context.Context, expr string, d time.Duration) (string, error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ectx, cancel := context.WithTimeout(bctx, 5*time.Second)
		v, err := chromedp.Run(ectx, chromedp.Evaluate[string](expr))
		cancel()
		if err == nil && v != "" {
			return v, nil
		}
		last = err
		if err := bctx.Err(); err != nil {
			return "", err
		}
		time.Sleep(200 * time.Millisecond) // a browser's page, no channel to wait on
	}
	return "", fmt.Errorf("%q stayed empty for %s (last error %v)", expr, d, last)
}

// forgeLogin logs user in on the forge's pages the browser was sent to,
// and grants the chat's application when the forge asks.
func forgeLogin(t *testing.T, bctx context.Context, start, login, password string) {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.Navigate(start)); err != nil {
		t.Fatalf("open %s: %v", start, err)
	}
	if _, err := waitFor(t, bctx, `document.querySelector('#user_name') ? 'yes' : ''`, 30*time.Second); err != nil {
		loc, _ := chromedp.Run(bctx, chromedp.Location())
		body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		t.Fatalf("no forge login page (at %s): %v\n%.3000s", loc, err, body)
	}
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#user_name"), login), chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Submit(chromedp.CSS("#password"))); err != nil {
		t.Fatalf("log in on the forge as %s: %v", login, err)
	}
	where, err := waitFor(t, bctx,
		`document.querySelector('#authorize-app') ? 'grant' : (document.querySelector('#message') ? 'chat' : (document.body && document.body.innerText.includes('may not use this chat') ? 'refused' : ''))`,
		30*time.Second)
	if err != nil {
		loc, _ := chromedp.Run(bctx, chromedp.Location())
		body, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("after the forge's login (at %s): %v\n%s", loc, err, body)
	}
	if where == "grant" {
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#authorize-app"))); err != nil {
			t.Fatalf("grant the chat's application: %v", err)
		}
	}
}

// say sends a message in the chat page and returns the n-th answer shown.
func say(t *testing.T, bctx context.Context, msg string, n int) string {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#message"), msg), chromedp.Click(chromedp.CSS("#send"))); err != nil {
		t.Fatalf("send %q: %v", msg, err)
	}
	got, err := waitFor(t, bctx,
		`(() => { const a = document.querySelectorAll('.msg.assistant, .msg.error'); return a.length >= `+strconv.Itoa(n)+` ? a[`+strconv.Itoa(n-1)+`].className + '|' + a[`+strconv.Itoa(n-1)+`].textContent : ''; })()`,
		2*time.Minute)
	if err != nil {
		t.Fatalf("no answer to %q: %v", msg, err)
	}
	cls, text, _ := strings.Cut(got, "|")
	if !strings.Contains(cls, "assistant") {
		t.Fatalf("the chat answered %q with an error: %s", msg, text)
	}
	return text
}

// TestBrowserLoginThroughTheForge: a forge user logs in through the real
// Gitea's OAuth2 provider in headless Chromium, behind the real Caddy,
// lands in the chat, gets the scripted model's answer from the real
// claude CLI in the session sandbox, and a second message resumes the
// same session; a user not on the allowlist gets 403, and a POST without
// the CSRF token is refused.
func TestBrowserLoginThroughTheForge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	gitea := forgetest.StartWith(t, forgetest.Options{OAuth2: true})
	alice, mallory := gitea.NewUser(t, "alice"), gitea.NewUser(t, "mallory")

	model, modelURL := claudetest.Start(t, claudetest.Scenario{Name: "chat", Default: true, Turns: []claudetest.Turn{
		claudetest.Text("The factory runs seven agents."), claudetest.Text("You asked which agents the factory runs."),
	}})
	runner, err := claude.New(claude.Options{Bin: claudetest.RequireCLI(t), BaseEnv: claudetest.Env(t), Timeout: 3 * time.Minute,
		Backends:      []claude.Backend{{Name: "anthropic", BaseURL: modelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions"), Isolate: os.Geteuid() == 0})
	if err != nil {
		t.Fatal(err)
	}
	// The shipped formula, read from disk: lib imports nothing above it.
	f, err := formula.Load(os.DirFS("../../formulas"), "chat")
	if err != nil {
		t.Fatal(err)
	}

	// The forge's internal address is another one than the browser's.
	target, _ := url.Parse(gitea.URL)
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.paths = append(rec.paths, r.URL.Path)
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(internal.Close)

	port := edgetest.FreePort(t)
	public := "http://127.0.0.1:" + strconv.Itoa(port)
	app, err := gitea.Admin(t).CreateOAuth2App(ctx, "disinto-chat", []string{chat.CallbackURL(public)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := chat.New(chat.Options{DataDir: t.TempDir(), ForgePublicURL: gitea.URL, ForgeInternalURL: internal.URL,
		ClientID: app.ClientID, ClientSecret: app.ClientSecret, PublicURL: public, AllowedUsers: []string{alice.Login},
		ForwardSecret: testSecret, Runner: runner, Sandbox: sb, MaxTurns: 3, Log: zerolog.New(zerolog.NewTestWriter(t)),
		SystemPrompt: func(u string) (string, error) {
			return formula.Render(f, formula.RenderInput{Role: "chat", Vars: map[string]string{"user": u, "forge_url": gitea.URL}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv}}
	cs.Start()
	t.Cleanup(cs.Close)
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("status")) }))
	t.Cleanup(status.Close)
	edgeURL := edgetest.Start(t, edge.Config{Port: port, Admin: "off", Forge: target.Host, Status: strings.TrimPrefix(status.URL, "http://"),
		Chat: strings.TrimPrefix(cs.URL, "http://")}, testSecret, "status-token-0123456789")

	bctx := browser(t, ctx)
	forgeLogin(t, bctx, edgeURL+"/chat/", alice.Login, alice.Password)
	if _, err := waitFor(t, bctx, `document.querySelector('#message') ? 'yes' : ''`, 30*time.Second); err != nil {
		t.Fatalf("not in the chat after the login: %v", err)
	}
	if who, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#user"))); who != alice.Login {
		t.Errorf("the chat says it is %q, want %q", who, alice.Login)
	}
	if loc, _ := chromedp.Run(bctx, chromedp.Location()); loc != edgeURL+"/chat/" {
		t.Errorf("landed at %s", loc)
	}
	first := "Which agents does the factory run?"
	if got := say(t, bctx, first, 1); got != "The factory runs seven agents." {
		t.Errorf("first answer %q", got)
	}
	if got := say(t, bctx, "What did I just ask?", 2); got != "You asked which agents the factory runs." {
		t.Errorf("second answer %q", got)
	}
	reqs := model.MessageRequests("chat")
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	last := reqs[len(reqs)-1]
	if last.Turn != 1 || !strings.Contains(strings.Join(last.Texts, "\n"), first) {
		t.Errorf("the second message did not resume the first session: turn %d, texts %q", last.Turn, last.Texts)
	}
	system, _ := last.Body["system"].([]any)
	if !strings.Contains(strings.ToLower(strings.Join(textsOf(system), "\n")), "you are the chat of the disinto code factory") {
		t.Errorf("the session lacks the chat formula's system prompt")
	}

	status403, err := chromedp.Run(bctx, chromedp.Evaluate[int](`fetch('/chat', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'message=hi'}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status403 != http.StatusForbidden {
		t.Errorf("POST without the CSRF token: %d %v", status403, err)
	}
	if !rec.has("/login/oauth/access_token") || !rec.has("/api/v1/user") || rec.has("/login/oauth/authorize") || rec.has("/user/login") {
		t.Errorf("the forge's internal address saw %v: want the token exchange and the user lookup only", rec.paths)
	}

	mctx := browser(t, ctx)
	forgeLogin(t, mctx, edgeURL+"/chat/", mallory.Login, mallory.Password)
	body, err := waitFor(t, mctx, `document.body && document.body.innerText.includes('may not use this chat') ? document.body.innerText : ''`, 30*time.Second)
	if err != nil || !strings.Contains(body, mallory.Login) {
		t.Errorf("mallory's login: %q %v", body, err)
	}
	code, err := chromedp.Run(mctx, chromedp.Evaluate[int](`fetch('/chat/', {redirect: 'manual'}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || code != http.StatusUnauthorized {
		t.Errorf("mallory reaches the chat after a refused login: %d %v", code, err)
	}
}

// textsOf collects the text blocks of a system prompt.
func textsOf(blocks []any) []string {
	var out []string
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
