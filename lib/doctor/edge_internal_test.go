package doctor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/edge/edgetest"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// fakeEdge answers like the edge; open makes /chat/ answer without a
// session.
func fakeEdge(t *testing.T, open bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/chat/login":
			http.Redirect(w, r, "http://forge.test/login/oauth/authorize?client_id=abc&state=s", http.StatusFound)
		case r.URL.Path == "/chat/" && open:
			w.WriteHeader(http.StatusOK)
		case strings.HasPrefix(r.URL.Path, "/chat") || strings.HasPrefix(r.URL.Path, "/factory"):
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func edgeFindings(t *testing.T, vals map[string]string) *Report {
	t.Helper()
	r := &Report{}
	checkEdge(context.Background(), r, Options{HTTPClient: http.DefaultClient}, &config.Config{Env: config.NewEnv(vals)})
	return r
}

func TestEdgeChecks(t *testing.T) {
	creds := map[string]string{"CHAT_OAUTH_CLIENT_ID": "abc", "CHAT_OAUTH_CLIENT_SECRET": "s3cret"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range creds {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	if r := edgeFindings(t, nil); len(r.Findings) != 0 {
		t.Errorf("no edge configured, findings %v", r.Findings)
	}
	good := edgeFindings(t, with(map[string]string{"DISINTO_EDGE_URL": fakeEdge(t, false)}))
	if good.Count(Warning)+good.Count(Blocking) != 0 || good.Count(OK) != 5 {
		t.Errorf("a good edge: %v", good.Findings)
	}
	open := edgeFindings(t, with(map[string]string{"DISINTO_EDGE_URL": "http://localhost", "DISINTO_EDGE_CHECK_URL": fakeEdge(t, true)}))
	var text strings.Builder
	_ = open.WriteText(&text)
	if !open.Blocking() || !strings.Contains(text.String(), "not behind the chat's login") {
		t.Errorf("an open chat: %v", open.Findings)
	}
	down := edgeFindings(t, map[string]string{"DISINTO_EDGE_URL": "http://127.0.0.1:9"})
	if down.Blocking() || down.Count(Warning) != 5 {
		t.Errorf("no edge, no credentials: %v", down.Findings)
	}
}

// TestEdgeDisabledRoutes runs the real edge without its forward-auth
// secret: the forge passes, and the chat's routes and the status page,
// answering the disabled 503, are warnings naming the secret, not
// failures.
func TestEdgeDisabledRoutes(t *testing.T) {
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("forge")) }))
	t.Cleanup(forge.Close)
	up := strings.TrimPrefix(forge.URL, "http://")
	base := edgetest.Start(t, edge.Config{Port: edgetest.FreePort(t), Admin: "off", Forge: up, Status: up, Chat: up}, "", "status-token-0123456789")
	r := edgeFindings(t, map[string]string{"DISINTO_EDGE_URL": base, "CHAT_OAUTH_CLIENT_ID": "abc", "CHAT_OAUTH_CLIENT_SECRET": "s3cret"})
	var text strings.Builder
	_ = r.WriteText(&text)
	if r.Blocking() || r.Count(Warning) != 3 || r.Count(OK) != 2 {
		t.Fatalf("an edge without its secret:\n%s", text.String())
	}
	if testing.Verbose() {
		t.Log(text.String())
	}
	for _, f := range r.Findings {
		if f.Status == Warning && (!strings.HasPrefix(f.Message, "disabled: the ") || !strings.Contains(f.Message, "not configured: set DISINTO_EDGE_SECRET") ||
			!strings.HasPrefix(f.Fix, "set DISINTO_EDGE_SECRET in .env")) {
			t.Errorf("finding %+v", f)
		}
		if f.Check == CheckEdge && strings.HasPrefix(f.Subject, "forge ") && f.Status != OK {
			t.Errorf("the forge through the edge: %+v", f)
		}
	}
}

// TestOAuthAppOnTheForge: against the real forge, the application with
// the edge's callback passes, one with another callback blocks, an
// unknown client id blocks.
func TestOAuthAppOnTheForge(t *testing.T) {
	srv := forgetest.StartWith(t, forgetest.Options{OAuth2: true})
	app, err := srv.Admin(t).CreateOAuth2App(context.Background(), "disinto-chat", []string{"https://f.example.org/chat/oauth/callback"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		public, id string
		want       Status
	}{
		{"https://f.example.org", app.ClientID, OK},
		{"https://other.example.org", app.ClientID, Blocking},
		{"https://f.example.org", "no-such-client", Blocking},
	} {
		env := config.NewEnv(map[string]string{"CHAT_OAUTH_CLIENT_ID": tc.id, "CHAT_OAUTH_CLIENT_SECRET": "s",
			"FORGE_ADMIN_USER": srv.AdminLogin, "FORGE_ADMIN_PASS": srv.AdminPassword})
		r := &Report{}
		checkOAuthApp(context.Background(), r, Options{HTTPClient: http.DefaultClient}, &config.Config{Env: env,
			Projects: []*config.Project{{ForgeURL: srv.URL}}}, tc.public, tc.id)
		if len(r.Findings) != 1 || r.Findings[0].Status != tc.want {
			t.Errorf("%s %s: %v, want %s", tc.public, tc.id, r.Findings, tc.want)
		}
	}
}
