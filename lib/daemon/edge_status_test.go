package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/redact"
)

// TestEdgeInStatus: with an edge configured, status and the status page
// show its routes and the chat's users; without one, nothing.
func TestEdgeInStatus(t *testing.T) {
	if EdgeStatusOf(config.NewEnv(nil)) != nil {
		t.Error("an edge reported without DISINTO_EDGE_URL")
	}
	e := EdgeStatusOf(config.NewEnv(map[string]string{"DISINTO_EDGE_URL": "https://f.example.org", "DISINTO_CHAT_USERS": "bob, alice,Bob", "FORGE_ADMIN_USER": "disinto-admin",
		"DISINTO_EDGE_SECRET_SET": "yes", "DISINTO_STATUS_TOKEN": "0123456789abcdef0123"}))
	if e == nil || strings.Join(e.ChatUsers, ",") != "alice,bob,disinto-admin" || len(e.Routes) != 4 || !e.Routes[1].Login || e.Routes[3].Login || e.Warning != "" {
		t.Fatalf("edge status %+v", e)
	}
	var b bytes.Buffer
	printEdge(&b, e)
	for _, want := range []string{"edge https://f.example.org:", "/chat /chat/* -> chat:8080 (forge login)", "/* -> forgejo:3000;", "chat users: alice, bob, disinto-admin"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status line lacks %q: %s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "disabled") {
		t.Errorf("a route reported disabled with the secret and the token: %s", b.String())
	}
	page, err := renderStatusPage(Report{Edge: e}, redact.New().String, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="edge">`, "/factory &rarr; agents:8081 (forge login)", "Chat users: alice, bob, disinto-admin"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}

// TestEdgeDisabledInStatus: without the forward-auth secret status and the
// status page report the chat's routes and the status page disabled, with
// what to set, and the forge served; without the status token only the
// status page.
func TestEdgeDisabledInStatus(t *testing.T) {
	e := EdgeStatusOf(config.NewEnv(map[string]string{"DISINTO_EDGE_URL": "http://localhost", "DISINTO_STATUS_TOKEN": "0123456789abcdef0123"}))
	if e == nil || !strings.HasPrefix(e.Warning, "DISINTO_EDGE_SECRET is not set") {
		t.Fatalf("edge status %+v", e)
	}
	for _, r := range e.Routes {
		if (r.Disabled != "") != (r.Name != "forge") || r.Login {
			t.Errorf("route %+v", r)
		}
	}
	var b bytes.Buffer
	printEdge(&b, e)
	for _, want := range []string{"/chat /chat/* -> disabled (the chat is not configured: set DISINTO_EDGE_SECRET);",
		"/factory /factory/* -> disabled (the status page is behind the chat's login, and the chat is not configured: set DISINTO_EDGE_SECRET);",
		"/* -> forgejo:3000;"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status line lacks %q: %s", want, b.String())
		}
	}
	page, err := renderStatusPage(Report{Edge: e}, redact.New().String, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "/chat &rarr; disabled (the chat is not configured: set DISINTO_EDGE_SECRET)") ||
		strings.Contains(string(page), "(forge login)") {
		t.Errorf("the status page does not show the chat disabled:\n%s", page)
	}

	e = EdgeStatusOf(config.NewEnv(map[string]string{"DISINTO_EDGE_URL": "http://localhost", "DISINTO_EDGE_SECRET": "0123456789abcdef0123"}))
	var off []string
	for _, r := range e.Routes {
		if r.Disabled != "" {
			off = append(off, r.Name+": "+r.Disabled)
		}
	}
	if strings.Join(off, ";") != "factory: the status page is not configured: set DISINTO_STATUS_TOKEN" || !e.Routes[1].Login {
		t.Errorf("without the token: %v", off)
	}
}
