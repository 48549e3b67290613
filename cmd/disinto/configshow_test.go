package main

import (
	"encoding/json"
	"io"
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

// TestFlagsNameTheirVariables: a flag whose default comes from the
// environment says which variable in --help.
func TestFlagsNameTheirVariables(t *testing.T) {
	root := (&app{stdout: io.Discard, stderr: io.Discard}).rootCmd()
	want := map[string]string{
		"projects-dir": "DISINTO_PROJECTS_DIR", "env-file": "DISINTO_ENV_FILE", "data-dir": "DISINTO_DATA_DIR",
		"allow-unisolated-sessions": "DISINTO_ALLOW_UNISOLATED_SESSIONS",
		"daemon --listen":           "DISINTO_LISTEN", "daemon --status-listen": "DISINTO_STATUS_LISTEN",
		"daemon --read-timeout": "DISINTO_HTTP_READ_TIMEOUT", "gateway --listen": "DISINTO_GATEWAY_LISTEN",
		"chat --listen": "CHAT_LISTEN", "doctor --webhook-url": "DISINTO_WEBHOOK_URL",
	}
	for flag, env := range want {
		cmd, name := root, flag
		if sub, f, ok := strings.Cut(flag, " --"); ok {
			c, _, err := root.Find([]string{sub})
			if err != nil {
				t.Fatal(err)
			}
			cmd, name = c, f
		}
		f := cmd.Flags().Lookup(name)
		if f == nil {
			f = cmd.PersistentFlags().Lookup(name)
		}
		if f == nil || !strings.Contains(f.Usage, "(env "+env) {
			t.Errorf("%s: %+v, want its usage to name %s", flag, f, env)
		}
	}
}
