package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// tokenEndpoint is a subscription's token endpoint: each refresh hands
// out the next access token.
type tokenEndpoint struct {
	*httptest.Server
	calls atomic.Int32
	// refreshed are the refresh tokens it was sent.
	mu        sync.Mutex
	refreshed []string
}

func newTokenEndpoint(t *testing.T) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req["grant_type"] != "refresh_token" || req["client_id"] != loginClientID {
			http.Error(w, "bad grant", http.StatusBadRequest)
			return
		}
		n := te.calls.Add(1)
		te.mu.Lock()
		te.refreshed = append(te.refreshed, req["refresh_token"])
		te.mu.Unlock()
		time.Sleep(50 * time.Millisecond) // a refresh is slow enough for others to wait on it
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "sk-ant-oat01-fresh-" + string(rune('0'+n)),
			"refresh_token": "sk-ant-ort01-next", "expires_in": 3600, "token_type": "Bearer"})
	}))
	t.Cleanup(te.Close)
	return te
}

// writeLogin writes a CLI login that expires at exp, with fields the
// gateway does not know.
func writeLogin(t *testing.T, path, access string, exp time.Time) {
	t.Helper()
	doc := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":"sk-ant-ort01-first","expiresAt":%d,`+
		`"scopes":["user:inference"],"subscriptionType":"max"},"mcpOAuth":{"kept":true}}`, access, exp.UnixMilli())
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLoginRefreshedOnceAcrossGateways: a login about to expire is
// refreshed by exactly one of the gateways that share it, even when all
// of them relay requests at once; the others use what it wrote, and the
// file keeps what the gateway does not know.
func TestLoginRefreshedOnceAcrossGateways(t *testing.T) {
	up := newUpstream(t)
	te := newTokenEndpoint(t)
	loginPath := filepath.Join(t.TempDir(), ".credentials.json")
	writeLogin(t, loginPath, "sk-ant-oat01-old", time.Now().Add(time.Minute))

	var wg sync.WaitGroup
	for range 3 { // three gateways, as in three containers
		g, err := New(Options{Backends: []Backend{{Name: "login", URL: up.URL, LoginFile: loginPath}}, Log: zerolog.Nop(), TokenURL: te.URL})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g)
		t.Cleanup(srv.Close)
		for range 4 {
			l, _ := g.Open(Grant{Backend: "login"})
			wg.Go(func() {
				if resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{}`); resp.StatusCode != http.StatusOK {
					t.Errorf("relay: %d %s", resp.StatusCode, body)
				}
			})
		}
	}
	wg.Wait()
	if n := te.calls.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	for _, r := range up.all() {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-ant-oat01-fresh-1" {
			t.Errorf("the backend saw %q", got)
		}
	}
	var doc struct {
		OAuth struct {
			AccessToken, RefreshToken, SubscriptionType string
			ExpiresAt                                   int64
		} `json:"claudeAiOauth"`
		MCP map[string]bool `json:"mcpOAuth"`
	}
	data, _ := os.ReadFile(loginPath)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OAuth.AccessToken != "sk-ant-oat01-fresh-1" || doc.OAuth.RefreshToken != "sk-ant-ort01-next" ||
		doc.OAuth.SubscriptionType != "max" || !doc.MCP["kept"] || time.Until(time.UnixMilli(doc.OAuth.ExpiresAt)) < 50*time.Minute {
		t.Errorf("login after the refresh: %s", data)
	}
	if fi, _ := os.Stat(loginPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("login mode %v", fi.Mode())
	}
}

// TestLoginRefreshedWhenRejected: a login the backend rejects before its
// expiry is refreshed once and the request sent again; a login that
// cannot be refreshed is an error the session sees, naming no token.
func TestLoginRefreshedWhenRejected(t *testing.T) {
	te := newTokenEndpoint(t)
	var seen []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, auth)
		mu.Unlock()
		if !strings.Contains(auth, "fresh") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"revoked"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	t.Cleanup(up.Close)
	loginPath := filepath.Join(t.TempDir(), ".credentials.json")
	writeLogin(t, loginPath, "sk-ant-oat01-revoked", time.Now().Add(time.Hour))
	g, err := New(Options{Backends: []Backend{{Name: "login", URL: up.URL, LoginFile: loginPath}}, Log: zerolog.Nop(), TokenURL: te.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	l, _ := g.Open(Grant{Backend: "login"})
	if resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{"model":"m"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the refresh: %d %s", resp.StatusCode, body)
	}
	if te.calls.Load() != 1 || len(seen) != 2 || seen[1] != "Bearer sk-ant-oat01-fresh-1" || l.Usage().InputTokens != 3 {
		t.Fatalf("refreshes %d, backend saw %v, usage %+v", te.calls.Load(), seen, l.Usage())
	}

	// Expired with no refresh token: the session gets a gateway error.
	if err := os.WriteFile(loginPath, []byte(`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-gone","expiresAt":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, srv.URL, l.Key, "/v1/messages", `{}`)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, "sk-ant") {
		t.Errorf("an expired login with no refresh token: %d %s", resp.StatusCode, body)
	}
}
