package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentvault "github.com/disinto/disinto/agents/vault"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
)

// TestVaultLint: lint accepts what the dispatcher accepts and names file,
// line and field of every problem.
func TestVaultLint(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "vault", "actions", "release-v1-2-0.toml")
	writeFile(t, good, "id = \"release-v1-2-0\"\nformula = \"release\"\ncontext = \"Release v1.2.0\"\nsecrets = [\"GITHUB_TOKEN\"]\n"+
		"vars = { version = \"v1.2.0\", sha = \"0123456789abcdef0123456789abcdef01234567\" }\n")
	policy := filepath.Join(dir, "vault", "policy.toml")
	writeFile(t, policy, "[tiers]\nrelease = \"high\"\n")
	code, out, errOut := runCLI(t, nil, "vault", "lint", "--policy", policy, good)
	if code != exitOK || !strings.Contains(out, "high tier") {
		t.Fatalf("good: %d %q %q", code, out, errOut)
	}
	bad := filepath.Join(dir, "vault", "actions", "x.toml")
	writeFile(t, bad, "id = \"y\"\nformula = \"release\"\ncontext = \"c\"\nsecrets = [\"AWS_KEY\"]\nunblocks = [\"#1\"]\n")
	// An action its formula can never render: refused here, not at dispatch.
	novars := filepath.Join(dir, "vault", "actions", "release-v2-0-0.toml")
	writeFile(t, novars, "id = \"release-v2-0-0\"\nformula = \"release\"\ncontext = \"Release v2.0.0\"\nsecrets = []\n")
	code, out, errOut = runCLI(t, nil, "vault", "lint", good, bad, novars)
	if code != exitFailure {
		t.Fatalf("bad: code %d", code)
	}
	for _, want := range []string{bad + ":1: id", bad + ":4: secrets", bad + ":5: unblocks", novars + ":2: vars.sha", novars + ":2: vars.version"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "ok: "+good) {
		t.Errorf("the good file is not reported: %q", out)
	}
}

// TestVaultNeedsItsOwnIdentity: without the vault bot's own token the
// vault commands refuse, rather than act as the dev bot.
func TestVaultNeedsItsOwnIdentity(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.toml"), "name = \"p\"\nrepo = \"acme/p\"\nforge_url = \"http://127.0.0.1:1\"\n")
	env := filepath.Join(dir, ".env")
	writeFile(t, env, "FORGE_TOKEN=dev-token\nFORGE_PASS=dev-pass\n")
	code, _, errOut := runCLI(t, nil, "vault", "list", "--projects-dir", dir, "--env-file", env, "--data-dir", dir)
	if code != exitFailure || !strings.Contains(errOut, "vault identity") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

// TestVaultJobScheduled: a project gets a vault job when the vault bot
// has credentials of its own, none when it would act as the dev bot.
func TestVaultJobScheduled(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	reg := daemon.Registry{config.RoleVault: newVaultAgent,
		config.RoleDev: func(daemon.Deps) (agent.Agent, error) { return sessionAgent{}, nil }}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"AGENT_ROLES=dev", "FORGE_TOKEN=t-dev-0123456789", "FORGE_PASS=p-dev"}, "example/dev"},
		{[]string{"AGENT_ROLES=dev", "FORGE_TOKEN=t-dev-0123456789", "FORGE_PASS=p-dev",
			"FORGE_VAULT_TOKEN=t-vault-0123456789", "FORGE_VAULT_PASS=p-vault"}, "example/dev,example/vault"},
	} {
		_, d := testDaemon(t, filepath.Join(dir, "projects"), tc.env, reg)
		var got []string
		for _, j := range d.Scheduler().Snapshot() {
			got = append(got, j.Project+"/"+j.Role)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("jobs %v, want %s", got, tc.want)
		}
		v, ok := d.Agent("example/vault").(*agentvault.Agent)
		if ok != strings.Contains(tc.want, "vault") {
			t.Errorf("vault dispatcher built: %v, want jobs %s", ok, tc.want)
		}
		if ok && v.Running() {
			t.Error("a dispatcher without a runner runs actions")
		}
	}
}
