package daemon

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/gateway"
)

// TestGatewayBackends: the gateway holds each backend's own credential;
// a local backend gets none of the default backend's, and the login file
// serves only the default backend, only when it has no key or token.
func TestGatewayBackends(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[backends.anthropic]\nmax_sessions = 3\n[agents.llama]\nbase_url = \"http://llama:8080\"\nmodel = \"q\"\n" +
		"[prices.\"claude-sonnet-4-5\"]\ninput = 3.0\noutput = 15.0\n"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want gateway.Backend
	}{
		{"api key", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-k", "CLAUDE_CONFIG_DIR": "/cfg"},
			gateway.Backend{Name: "anthropic", APIKey: "sk-ant-api03-k", MaxConcurrent: 3}},
		{"oauth token", map[string]string{config.OAuthTokenEnv: "sk-ant-oat01-t", "CLAUDE_CONFIG_DIR": "/cfg"},
			gateway.Backend{Name: "anthropic", OAuthToken: "sk-ant-oat01-t", MaxConcurrent: 3}},
		{"login", map[string]string{"CLAUDE_CONFIG_DIR": "/cfg"},
			gateway.Backend{Name: "anthropic", LoginFile: filepath.Join("/cfg", loginFile), MaxConcurrent: 3}},
	} {
		cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(file)}, config.NewEnv(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]gateway.Backend{}
		for _, b := range gatewayBackends(cfg) {
			got[b.Name] = b
		}
		if got["anthropic"] != tc.want {
			t.Errorf("%s: default backend %+v, want %+v", tc.name, got["anthropic"], tc.want)
		}
		if p := gatewayOptions(cfg, zerolog.Nop()).Prices["claude-sonnet-4-5"]; p != (gateway.Price{Input: 3, Output: 15}) {
			t.Errorf("%s: price %+v", tc.name, p)
		}
		if l := got["llama"]; l.URL != "http://llama:8080" || (l.APIKey != "" && l.APIKey == tc.want.APIKey) || l.OAuthToken != "" || l.LoginFile != "" {
			t.Errorf("%s: local backend %+v holds a credential", tc.name, l)
		}
	}
}
