package provision

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

func TestEnvFileKeepsForeignLinesAndReplacesOurs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	orig := "# operator notes\nANTHROPIC_API_KEY=sk-keep\nFORGE_TOKEN=old\n\nexport OTHER=1\nFORGE_TOKEN=dup\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := OpenEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Get("FORGE_TOKEN"); got != "dup" {
		t.Errorf("Get(FORGE_TOKEN) = %q, want the last assignment", got)
	}
	tests := []struct {
		key, val string
		changed  bool
	}{
		{"FORGE_TOKEN", "new", true},
		{"FORGE_TOKEN", "new", false},
		{"FORGE_PASS", "with space # and \"quotes\"", true},
		{"ANTHROPIC_API_KEY", "sk-keep", false},
	}
	for _, tt := range tests {
		if got := e.Set(tt.key, tt.val); got != tt.changed {
			t.Errorf("Set(%s, %q) changed = %v, want %v", tt.key, tt.val, got, tt.changed)
		}
	}
	if err := e.Save(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	want := "# operator notes\nANTHROPIC_API_KEY=sk-keep\nFORGE_TOKEN=new\n\nexport OTHER=1\nFORGE_PASS=\"with space # and \\\"quotes\\\"\"\n"
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	vals, err := config.ReadEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if vals["FORGE_PASS"] != "with space # and \"quotes\"" || vals["FORGE_TOKEN"] != "new" || vals["OTHER"] != "1" {
		t.Errorf("lib/config reads %v", vals)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestEnvFileMissingIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", ".env")
	e, err := OpenEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e.Set("FORGE_URL", "http://forgejo:3000")
	if err := e.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "FORGE_URL=http://forgejo:3000\n" {
		t.Errorf("file %q", data)
	}
}

func TestEnvFileBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("FORGE_URL=x\nnot a pair\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenEnvFile(path)
	if err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("err = %v, want a line-2 problem", err)
	}
}

func TestOpsLayout(t *testing.T) {
	files := opsLayout("acme/widget", "root")
	paths := map[string]string{}
	for _, f := range files {
		paths[f.Path] = string(f.Content)
	}
	for _, want := range []string{
		"README.md", "vault/actions/.gitkeep", "vault/policy.toml", "vault/pending/.gitkeep",
		"knowledge/.gitkeep", "evidence/engagement/.gitkeep", "evidence/user-test/.gitkeep",
		"sprints/.gitkeep", "journal/supervisor/.gitkeep", "prerequisites.md",
	} {
		if _, ok := paths[want]; !ok {
			t.Errorf("layout lacks %s", want)
		}
	}
	if !strings.Contains(paths["README.md"], "acme/widget") || !strings.Contains(paths["README.md"], "`root`") {
		t.Errorf("README not rendered: %s", paths["README.md"])
	}
	if !strings.Contains(paths["vault/policy.toml"], "release = \"high\"") {
		t.Errorf("policy lacks tiers")
	}
	missing := missingFiles(files, []string{"README.md", "sprints/.gitkeep"})
	if len(missing) != len(files)-2 {
		t.Errorf("missingFiles: %d, want %d", len(missing), len(files)-2)
	}
}

func TestCoreBotsMatchConfigVariables(t *testing.T) {
	env := map[string]string{}
	for _, b := range coreBots() {
		env[b.TokenVar] = "token-of-" + b.Login
		env[b.PassVar] = "pass-of-" + b.Login
	}
	cfg := &config.Config{Env: config.NewEnv(env)}
	for _, r := range config.AllRoles() {
		bot, err := cfg.Bot(r)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if bot.Fallback || bot.Token != "token-of-"+bot.User || bot.Password != "pass-of-"+bot.User {
			t.Errorf("%s: config reads %+v", r, bot)
		}
	}
}

// TestRunTightensAnExposedEnvFile: an env file that already holds every
// value but is readable by others is rewritten 0600 even though nothing
// changed.
func TestRunTightensAnExposedEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	content := "FORGE_URL=http://forge:3000\nFORGE_ADMIN_USER=admin\nFORGE_TOKEN=tok-0123456789\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	p := &run{opts: Options{EnvFile: path, ForgeURL: "http://forge:3000"}, rep: &Report{}, login: "admin"}
	if err := p.openEnv(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("content changed:\n%s", data)
	}
}
