package main

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
)

func chatConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	file := "name = \"a\"\nrepo = \"acme/widget\"\nforge_url = \"http://forgejo:3000\"\n"
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(file)}, config.NewEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestChatOptions: the chat's settings come from the environment and the
// env file, its system prompt from the chat formula, its allowlist with
// the forge admin; a bad number names its variable.
func TestChatOptions(t *testing.T) {
	a := &app{env: []string{"DISINTO_EDGE_URL=https://factory.example.org"}}
	cfg := chatConfig(t, map[string]string{"CHAT_OAUTH_CLIENT_ID": "id", "CHAT_OAUTH_CLIENT_SECRET": "secret",
		"DISINTO_CHAT_USERS": "alice, bob", "FORGE_ADMIN_USER": "disinto-admin", "DISINTO_EDGE_SECRET": "0123456789abcdef",
		"CHAT_WORKERS": "3", "CHAT_TIMEOUT": "90s"})
	o, err := a.chatOptions(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if o.PublicURL != "https://factory.example.org" || o.ForgePublicURL != o.PublicURL || o.ForgeInternalURL != "http://forgejo:3000" {
		t.Errorf("URLs %q %q %q", o.PublicURL, o.ForgePublicURL, o.ForgeInternalURL)
	}
	if strings.Join(o.AllowedUsers, ",") != "alice,bob,disinto-admin" || o.Workers != 3 || o.Timeout.Seconds() != 90 || o.Model != "sonnet" {
		t.Errorf("options %+v", o)
	}
	prompt, err := o.SystemPrompt("alice")
	if err != nil || !strings.Contains(prompt, "talking with alice") || !strings.Contains(prompt, "acme/widget on https://factory.example.org") {
		t.Errorf("system prompt %v:\n%s", err, prompt)
	}
	bad := chatConfig(t, map[string]string{"CHAT_MAX_REQUESTS_PER_HOUR": "lots"})
	if _, err := a.chatOptions(bad, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "CHAT_MAX_REQUESTS_PER_HOUR") {
		t.Errorf("bad number: %v", err)
	}
}
