package doctor

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// TestIdentitiesAsTheDaemonSeesThem: the doctor resolves every job's
// identity by the daemon's rules: a role without a token of its own acts
// as the dev bot only where the role table allows it, the architect,
// filer and vault never; the vault also needs its password (it pushes
// to the ops repository as itself). A role the daemon leaves out is a
// warning naming the variable to set; the roles it runs are checked.
func TestIdentitiesAsTheDaemonSeesThem(t *testing.T) {
	project := map[string][]byte{"p.toml": []byte("name = \"p\"\nrepo = \"acme/p\"\nops_repo = \"acme/p-ops\"\n")}
	base := map[string]string{"AGENT_ROLES": "review,dev,gardener,architect", "FORGE_TOKEN": "dev-token-0123456789",
		"FORGE_PASS": "dev-pass", "FORGE_REVIEW_TOKEN": "review-token-0123456789"}
	tests := []struct {
		name    string
		env     map[string]string
		skipped []string // jobs reported not scheduled
		checked []string // jobs whose identity is checked
	}{
		{
			name:    "dev token only",
			env:     base,
			skipped: []string{"p/architect", "p/filer", "p/vault"},
			checked: []string{"p/dev", "p/gardener", "p/review"},
		},
		{
			name: "vault token without its password",
			env: with(base, "FORGE_ARCHITECT_TOKEN", "arch-token-0123456789", "FORGE_FILER_TOKEN", "filer-token-0123456789",
				"FORGE_VAULT_TOKEN", "vault-token-0123456789"),
			skipped: []string{"p/vault"},
			checked: []string{"p/architect", "p/dev", "p/filer", "p/gardener", "p/review"},
		},
		{
			name: "every identity",
			env: with(base, "FORGE_ARCHITECT_TOKEN", "arch-token-0123456789", "FORGE_FILER_TOKEN", "filer-token-0123456789",
				"FORGE_VAULT_TOKEN", "vault-token-0123456789", "FORGE_VAULT_PASS", "vault-pass"),
			checked: []string{"p/architect", "p/dev", "p/filer", "p/gardener", "p/review", "p/vault"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(project, config.NewEnv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			r := &Report{}
			var checked []string
			for _, b := range collectBots(r, cfg) {
				checked = append(checked, b.jobs...)
			}
			sort.Strings(checked)
			var skipped []string
			for _, f := range r.Findings {
				if f.Status != Warning || !strings.Contains(f.Message, "not scheduled") {
					t.Errorf("finding %s", f)
					continue
				}
				skipped = append(skipped, f.Subject)
				if !strings.Contains(f.Message, "FORGE_") {
					t.Errorf("finding names no variable: %s", f)
				}
			}
			sort.Strings(skipped)
			if strings.Join(skipped, ",") != strings.Join(tt.skipped, ",") {
				t.Errorf("not scheduled %v, want %v", skipped, tt.skipped)
			}
			if strings.Join(checked, ",") != strings.Join(tt.checked, ",") {
				t.Errorf("checked %v, want %v", checked, tt.checked)
			}
		})
	}
}

// with is env plus the given key, value pairs.
func with(env map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestConfigFindingsCarryTheirFix: each configuration problem is a
// finding with the fix of its own, not one text for all.
func TestConfigFindingsCarryTheirFix(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "projects", "a.toml"), "name = \"a\"\nrepo = \"o/a\"\ntimezone = \"Mars/Olympus\"\n[roles.dev]\nenabled = \"yes\"\n")
	writeTestFile(t, filepath.Join(dir, ".env"), "not a var\nFORGE_TOKEN=x\nalso not\n")
	r := &Report{}
	if cfg := checkConfig(r, Options{ProjectsDir: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, ".env"), DataDir: dir}); cfg != nil {
		t.Fatal("a broken configuration loaded")
	}
	fixes := map[string]bool{}
	for _, f := range r.Findings {
		fixes[f.Fix] = true
	}
	if len(r.Findings) != 4 || len(fixes) != 4 {
		t.Fatalf("findings %v: want 4, each with a fix of its own", r.Findings)
	}
	for i, want := range []string{"line 1", "line 3", "Europe/Berlin", "true or false"} {
		if !strings.Contains(r.Findings[i].Fix, want) {
			t.Errorf("finding %s: fix does not say %q", r.Findings[i], want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
