package main

import (
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/agents/reproduce"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// The sidecar gets its model credential as a secret file and its base
// URL in the environment; without a credential it cannot run.
func TestSidecarCredential(t *testing.T) {
	sec, env, err := sidecarCredential(config.Backend{APIKey: "sk-ant-key-0123456789", BaseURL: "http://model:8080"})
	if err != nil || sec["ANTHROPIC_API_KEY"] != "sk-ant-key-0123456789" || env["ANTHROPIC_BASE_URL"] != "http://model:8080" || len(env) != 1 {
		t.Errorf("api key: %v %v %v", sec, env, err)
	}
	sec, _, err = sidecarCredential(config.Backend{OAuthToken: "oauth-token-0123456789"})
	if err != nil || sec[config.OAuthTokenEnv] != "oauth-token-0123456789" || len(sec) != 1 {
		t.Errorf("oauth: %v %v", sec, err)
	}
	if _, _, err := sidecarCredential(config.Backend{}); err == nil {
		t.Error("no credential: no error")
	}
}

// The role is registered and builds without a Docker engine (it then only
// lists the bug reports due) and with one.
func TestReproduceAgentBuilds(t *testing.T) {
	if _, ok := agentRegistry()[config.RoleReproduce]; !ok {
		t.Fatal("the reproduce role has no constructor")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.toml"), "name = \"p\"\nrepo = \"o/p\"\nforge_url = \"http://127.0.0.1:9\"\n")
	for _, env := range [][]string{
		{"FORGE_TOKEN=dev-token-0123456789"},
		{"FORGE_TOKEN=dev-token-0123456789", "DOCKER_HOST=unix:///var/run/docker.sock", "ANTHROPIC_API_KEY=sk-ant-key-0123456789"},
	} {
		cfg, err := config.Load(dir, filepath.Join(dir, "none.env"), env)
		if err != nil {
			t.Fatal(err)
		}
		data := sessionDataDir(t)
		s, err := daemon.NewServices(cfg, redact.New(cfg.Secrets()...), nil, daemon.CoreOptions{DataDir: data, AllowUnisolated: true, Formulas: formulas.FS}, logx.Nop())
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.Projects[0]
		ag, err := newReproduceAgent(daemon.Deps{Config: cfg, Project: p, Role: config.RoleReproduce, DataDir: data,
			StateDir: filepath.Join(data, "state", p.Name), Log: logx.Nop(), Services: s})
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if _, ok := ag.(*reproduce.Agent); !ok {
			t.Errorf("agent %T", ag)
		}
	}
}
