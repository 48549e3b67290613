package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigShow: every setting with its value and where it came from,
// secrets masked, and each project file's keys.
func TestConfigShow(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "p.toml"), "name = \"p\"\nrepo = \"o/p\"\n[budget]\nday_usd = 20.0\n")
	writeFile(t, filepath.Join(dir, ".env"), "FORGE_URL=http://forge.example:3000\nFORGE_TOKEN=tok-from-file-0123456789\nFORGE_TOKEN_LLAMA=llama-secret-0123456789\n")
	args := []string{"config", "show", "--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, ".env")}
	env := []string{"CLAUDE_TIMEOUT=45m", "HOME=" + dir}

	code, out, errOut := runCLI(t, env, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"FORGE_URL", "http://forge.example:3000", "env file " + filepath.Join(dir, ".env"),
		"CLAUDE_TIMEOUT", "45m", "process environment",
		"PROJECT p", "budget.day_usd", "20",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, secret := range []string{"tok-from-file", "llama-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("a secret shown: %s", out)
		}
	}

	code, out, errOut = runCLI(t, env, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var doc struct {
		Environment []shownSetting `json:"environment"`
		Projects    []shownProject `json:"projects"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	by := map[string]shownSetting{}
	for _, s := range doc.Environment {
		if _, dup := by[s.Name]; dup {
			t.Errorf("%s shown twice", s.Name)
		}
		by[s.Name] = s
	}
	if s := by["FORGE_TOKEN_LLAMA"]; s.Value != masked || !s.Secret {
		t.Errorf("a family member: %+v", s)
	}
	if s := by["AGENT_ROLES"]; s.Source != "default" || s.Value != "" {
		t.Errorf("an unset setting: %+v", s)
	}
	if len(doc.Projects) != 1 || len(doc.Projects[0].Settings) != 3 {
		t.Errorf("projects: %+v", doc.Projects)
	}

	// A broken project file fails as config check does.
	writeFile(t, filepath.Join(dir, "projects", "p.toml"), "name = \"p\"\nrepo = \"o/p\"\n[budget]\nday_usd = -1.0\n")
	if code, _, errOut := runCLI(t, env, args...); code == 0 || !strings.Contains(errOut, "budget.day_usd") {
		t.Errorf("a broken file: exit %d, %s", code, errOut)
	}
}
