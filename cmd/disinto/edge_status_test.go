package main

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
	if edgeStatusOf(config.NewEnv(nil)) != nil {
		t.Error("an edge reported without DISINTO_EDGE_URL")
	}
	e := edgeStatusOf(config.NewEnv(map[string]string{"DISINTO_EDGE_URL": "https://f.example.org", "DISINTO_CHAT_USERS": "bob, alice,Bob", "FORGE_ADMIN_USER": "disinto-admin"}))
	if e == nil || strings.Join(e.ChatUsers, ",") != "alice,bob,disinto-admin" || len(e.Routes) != 4 || !e.Routes[1].Login || e.Routes[3].Login {
		t.Fatalf("edge status %+v", e)
	}
	var b bytes.Buffer
	printEdge(&b, e)
	for _, want := range []string{"edge https://f.example.org:", "/chat /chat/* -> chat:8080 (forge login)", "/* -> forgejo:3000;", "chat users: alice, bob, disinto-admin"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status line lacks %q: %s", want, b.String())
		}
	}
	page, err := renderStatusPage(statusReport{Edge: e}, redact.New().String, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="edge">`, "/factory &rarr; agents:8081 (forge login)", "Chat users: alice, bob, disinto-admin"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}
