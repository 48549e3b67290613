package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestRemoteGateway: daemons of several containers share one gateway
// through its grant API: its keys, budgets and backend limits hold across
// them all, and nobody without its admin token gets a key.
func TestRemoteGateway(t *testing.T) {
	up := newUpstream(t)
	up.hold = 30 * time.Millisecond
	const admin = "gateway-admin-token-0123456789"
	g, err := New(Options{Backends: []Backend{{Name: "a", URL: up.URL, APIKey: "k", MaxConcurrent: 1}}, Log: zerolog.Nop(), AdminToken: admin})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	daemons := []*Remote{{URL: srv.URL, Token: admin}, {URL: srv.URL + "/", Token: admin}}

	berlin, _ := time.LoadLocation("Europe/Berlin")
	var wg sync.WaitGroup
	usages := make([]Usage, 4)
	for i := range usages {
		l, err := daemons[i%2].Grant(Grant{Project: "p", Role: "dev", Backend: "a", TZ: berlin, Limits: Limits{Day: Bound{Tokens: 700}}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, srv.URL, l.Token(), "/v1/messages", `{"stream":true}`)
			usages[i] = l.Close()
			if resp, _ := post(t, srv.URL, l.Token(), "/v1/messages", `{}`); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a closed key: %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	if up.maxSeen.Load() != 1 {
		t.Errorf("the backend saw %d requests at once across two daemons, want 1", up.maxSeen.Load())
	}
	for _, u := range usages {
		if u.InputTokens != 120 || u.Requests != 1 {
			t.Errorf("usage over the grant API %+v", u)
		}
	}
	// 4 × 199 tokens: the shared day budget is spent for every daemon.
	_, err = daemons[1].Grant(Grant{Project: "p", Backend: "a", TZ: berlin, Limits: Limits{Day: Bound{Tokens: 700}}})
	var be *BudgetError
	if !errors.Is(err, ErrBudget) || !errors.As(err, &be) || be.Budget != "day" || be.Used != 796 {
		t.Errorf("a grant on a spent shared day: %v", err)
	}
	for _, bad := range []*Remote{{URL: srv.URL, Token: "wrong-token-0123456789"}, {URL: srv.URL}} {
		if _, err := bad.Grant(Grant{Backend: "a"}); err == nil || !strings.Contains(err.Error(), "DISINTO_GATEWAY_TOKEN") {
			t.Errorf("a grant without the admin token: %v", err)
		}
	}
	if _, err := New(Options{AdminToken: "short"}); err == nil {
		t.Error("a short admin token accepted")
	}
	// Without an admin token, the grant API is closed.
	g2, _ := New(Options{Backends: []Backend{{Name: "a", URL: up.URL}}})
	srv2 := httptest.NewServer(g2)
	t.Cleanup(srv2.Close)
	if _, err := (&Remote{URL: srv2.URL, Token: ""}).Grant(Grant{Backend: "a"}); err == nil {
		t.Error("a grant from a gateway without an admin token")
	}
}
