package daemon

import (
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// TestOAuthTokenReachesDefaultBackendOnly: CLAUDE_CODE_OAUTH_TOKEN is the
// default backend's model credential, handed to its sessions; a local
// backend never receives it.
func TestOAuthTokenReachesDefaultBackendOnly(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[backends.anthropic]\nmax_sessions = 2\n[agents.llama]\nbase_url = \"http://llama:8080\"\nmodel = \"q\"\n"
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(file)}, config.NewEnv(map[string]string{config.OAuthTokenEnv: "sk-ant-oat01-test"}))
	if err != nil {
		t.Fatal(err)
	}
	if b := claudeBackend(cfg.Backends["anthropic"]); b.Env[config.OAuthTokenEnv] != "sk-ant-oat01-test" || b.MaxSessions != 2 {
		t.Errorf("default backend = %+v", b)
	}
	if b := claudeBackend(cfg.Backends["llama"]); b.Env[config.OAuthTokenEnv] != "" {
		t.Errorf("a local backend receives the OAuth token: %+v", b.Env)
	}
	found := false
	for _, s := range cfg.Secrets() {
		found = found || s == "sk-ant-oat01-test"
	}
	if !found {
		t.Error("the OAuth token is not among the secrets the redactor masks")
	}
}
