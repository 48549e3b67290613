package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/doctor"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

// doctorRig is a factory freshly provisioned by disinto init on a real
// forge, and the environment disinto doctor runs with.
type doctorRig struct {
	srv      *forgetest.Server
	dir      string // holds the provisioned env file and projects dir
	hookURL  string
	claude   string
	baseEnv  []string
	envVals  map[string]string
	projects string
	envFile  string
}

// newDoctorRig runs disinto init against a fresh forge.
func newDoctorRig(t *testing.T) *doctorRig {
	t.Helper()
	g := &doctorRig{srv: forgetest.Start(t), dir: t.TempDir(), hookURL: "http://127.0.0.1:9/hooks/forgejo", claude: claudetest.RequireCLI(t)}
	g.envFile, g.projects = filepath.Join(g.dir, ".env"), filepath.Join(g.dir, "projects")
	code, out, errOut := runCLI(t, nil, "init", "--yes", "--forge-url", g.srv.URL, "--admin-user", g.srv.AdminLogin,
		"--admin-password", g.srv.AdminPassword, "--repo", "acme/demo", "--source", gitRepo(t),
		"--projects-dir", g.projects, "--env-file", g.envFile, "--webhook-url", g.hookURL)
	if code != exitOK {
		t.Fatalf("init: code %d\n%s\n%s", code, out, errOut)
	}
	// init says each step as it starts, in order, on stderr.
	var steps []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "disinto init: [") {
			steps = append(steps, l)
		}
	}
	n := len(steps)
	if n < 10 || steps[0] != fmt.Sprintf("disinto init: [1/%d] connect", n) || steps[n-1] != fmt.Sprintf("disinto init: [%d/%d] project file", n, n) {
		t.Errorf("progress lines:\n%s", strings.Join(steps, "\n"))
	}
	vals, err := config.ReadEnvFile(g.envFile)
	if err != nil {
		t.Fatal(err)
	}
	g.envVals = vals
	g.baseEnv = []string{
		"FORGE_ADMIN_USER=" + g.srv.AdminLogin, "FORGE_ADMIN_PASS=" + g.srv.AdminPassword,
		"DISINTO_WEBHOOK_URL=" + g.hookURL, "ANTHROPIC_API_KEY=sk-test-key", "CLAUDE_BIN=" + g.claude,
		"CLAUDE_CONFIG_DIR=" + t.TempDir(),
	}
	return g
}

// copyConfig copies the provisioned env file and projects into a new
// directory, edited by edit (the env file's text, the project file's
// text), and returns their paths.
func (g *doctorRig) copyConfig(t *testing.T, editEnv, editProject func(string) string) (envFile, projects string) {
	t.Helper()
	dir := t.TempDir()
	envFile, projects = filepath.Join(dir, ".env"), filepath.Join(dir, "projects")
	env, err := os.ReadFile(g.envFile)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := os.ReadFile(filepath.Join(g.projects, "demo.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if editEnv != nil {
		env = []byte(editEnv(string(env)))
	}
	if editProject != nil {
		proj = []byte(editProject(string(proj)))
	}
	writeFile(t, envFile, string(env))
	writeFile(t, filepath.Join(projects, "demo.toml"), string(proj))
	return envFile, projects
}

// doctor runs disinto doctor --json on the given config with the rig's
// environment plus env, and returns the exit code and the findings.
func (g *doctorRig) doctor(t *testing.T, envFile, projects string, env []string, args ...string) (int, []doctor.Finding, string) {
	t.Helper()
	argv := append([]string{"doctor", "--json", "--env-file", envFile, "--projects-dir", projects, "--data-dir", filepath.Join(t.TempDir(), "data")}, args...)
	code, out, errOut := runCLI(t, append(append([]string{}, g.baseEnv...), env...), argv...)
	var rep struct {
		Blocking int              `json:"blocking"`
		Findings []doctor.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for _, s := range g.envVals {
		if len(s) >= 8 && strings.Contains(out+errOut, s) && s != g.hookURL && !strings.HasPrefix(s, "http") {
			t.Errorf("a value of the env file appears in the output")
		}
	}
	return code, rep.Findings, out
}

// find returns the findings of check with status st.
func find(fs []doctor.Finding, check string, st doctor.Status) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range fs {
		if f.Check == check && f.Status == st {
			out = append(out, f)
		}
	}
	return out
}

// wantBlocking fails unless doctor exited 1 with a blocking finding of
// check whose message or fix contains says.
func wantBlocking(t *testing.T, code int, fs []doctor.Finding, out, check, says string) {
	t.Helper()
	if code != exitFailure {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	for _, f := range find(fs, check, doctor.Blocking) {
		if strings.Contains(f.Message+" "+f.Fix+" "+f.Subject, says) {
			if f.Fix == "" {
				t.Errorf("blocking finding without a fix: %+v", f)
			}
			return
		}
	}
	t.Errorf("no blocking %s finding saying %q:\n%s", check, says, out)
}

// TestDoctorAgainstRealForge: a factory fresh from disinto init passes
// every check, and each check catches its own failure.
func TestDoctorAgainstRealForge(t *testing.T) {
	g := newDoctorRig(t)
	ctx := context.Background()

	t.Run("fresh init passes", func(t *testing.T) {
		code, fs, out := g.doctor(t, g.envFile, g.projects, nil)
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, check := range []string{doctor.CheckConfig, doctor.CheckEnvFile, doctor.CheckPlaceholder, doctor.CheckModel, doctor.CheckClaude,
			doctor.CheckDataDir, doctor.CheckStatus, doctor.CheckForge, doctor.CheckToken, doctor.CheckWebhook, doctor.CheckProtection} {
			if len(find(fs, check, doctor.OK)) == 0 {
				t.Errorf("no ok finding of %s:\n%s", check, out)
			}
		}
		if n := len(find(fs, doctor.CheckToken, doctor.OK)); n < 6 {
			t.Errorf("%d tokens checked, want one per scheduled role's bot:\n%s", n, out)
		}
		for _, f := range fs {
			if f.Status != doctor.OK {
				t.Errorf("not ok after a fresh init: %+v", f)
			}
		}
	})

	t.Run("config", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, func(s string) string { return s + "\n[limits]\nin_flight = \"two\"\n" })
		code, fs, out := g.doctor(t, envFile, projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckConfig, "limits.in_flight: want an integer, got a string")
	})

	t.Run("env file missing", func(t *testing.T) {
		_, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, filepath.Join(t.TempDir(), "absent.env"), projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckEnvFile, "does not exist")
	})

	t.Run("env file mode", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		if err := os.Chmod(envFile, 0o644); err != nil {
			t.Fatal(err)
		}
		code, fs, out := g.doctor(t, envFile, projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckEnvFile, "chmod 600 "+envFile)
	})

	t.Run("placeholder password", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"FORGE_ADMIN_PASS=" + provision.PlaceholderAdminPassword})
		wantBlocking(t, code, fs, out, doctor.CheckPlaceholder, "FORGE_ADMIN_PASS")
	})

	t.Run("model credentials", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"ANTHROPIC_API_KEY="})
		wantBlocking(t, code, fs, out, doctor.CheckModel, "no model credentials")

		// A login of the CLI in CLAUDE_CONFIG_DIR is enough, as is an
		// OAuth token.
		cfgDir := t.TempDir()
		writeFile(t, filepath.Join(cfgDir, ".credentials.json"), `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-x","refreshToken":"r"}}`)
		code, fs, out = g.doctor(t, envFile, projects, []string{"ANTHROPIC_API_KEY=", "CLAUDE_CONFIG_DIR=" + cfgDir})
		if code != exitOK || len(find(fs, doctor.CheckModel, doctor.OK)) != 1 {
			t.Errorf("login in CLAUDE_CONFIG_DIR: exit %d\n%s", code, out)
		}
		code, fs, out = g.doctor(t, envFile, projects, []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-y"})
		if code != exitOK || len(find(fs, doctor.CheckModel, doctor.OK)) != 1 {
			t.Errorf("OAuth token: exit %d\n%s", code, out)
		}
	})

	t.Run("claude CLI", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"CLAUDE_BIN=" + filepath.Join(t.TempDir(), "no-claude")})
		wantBlocking(t, code, fs, out, doctor.CheckClaude, "--version` failed")
	})

	t.Run("data dir", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		file := filepath.Join(t.TempDir(), "a-file")
		writeFile(t, file, "")
		code, fs, out := g.doctor(t, envFile, projects, nil, "--data-dir", file)
		wantBlocking(t, code, fs, out, doctor.CheckDataDir, "not a directory")
	})

	t.Run("status listener", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"DISINTO_STATUS_LISTEN=0.0.0.0:8081"})
		wantBlocking(t, code, fs, out, doctor.CheckStatus, "DISINTO_STATUS_TOKEN")
	})

	t.Run("forge unreachable", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, func(s string) string {
			return strings.Replace(s, g.srv.URL, "http://127.0.0.1:1", 1)
		})
		code, fs, out := g.doctor(t, envFile, projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckForge, "unreachable")
	})

	t.Run("forge too old", func(t *testing.T) {
		old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"version":"1.19.4"}`))
		}))
		defer old.Close()
		envFile, projects := g.copyConfig(t, nil, func(s string) string { return strings.Replace(s, g.srv.URL, old.URL, 1) })
		code, fs, out := g.doctor(t, envFile, projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckForge, "older than 1.20")
	})

	t.Run("token rejected", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, func(s string) string {
			return strings.Replace(s, "FORGE_REVIEW_TOKEN=", "FORGE_REVIEW_TOKEN=0", 1)
		}, nil)
		code, fs, out := g.doctor(t, envFile, projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckToken, "rejected by")
	})

	t.Run("token of another user", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"FORGE_REVIEW_TOKEN=" + g.envVals["FORGE_GARDENER_TOKEN"]})
		wantBlocking(t, code, fs, out, doctor.CheckToken, "authenticates as gardener-bot, not as the configured bot review-bot")
	})

	t.Run("token without a scope", func(t *testing.T) {
		c, err := forge.New(forge.Options{URL: g.srv.URL, User: "review-bot", Password: g.envVals["FORGE_REVIEW_PASS"]})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := c.CreateToken(ctx, "doctor-narrow", forge.ScopeReadUser, forge.ScopeReadRepository)
		if err != nil {
			t.Fatal(err)
		}
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"FORGE_REVIEW_TOKEN=" + tok})
		wantBlocking(t, code, fs, out, doctor.CheckToken, "lacks the scope(s) write:issue, write:repository")

		// Without read:user the token cannot even say whose it is.
		tok, err = c.CreateToken(ctx, "doctor-anonymous", forge.ScopeWriteRepository, forge.ScopeWriteIssue)
		if err != nil {
			t.Fatal(err)
		}
		code, fs, out = g.doctor(t, envFile, projects, []string{"FORGE_REVIEW_TOKEN=" + tok})
		wantBlocking(t, code, fs, out, doctor.CheckToken, "lacks the scope read:user")
	})

	t.Run("webhook", func(t *testing.T) {
		envFile, projects := g.copyConfig(t, nil, nil)
		code, fs, out := g.doctor(t, envFile, projects, []string{"DISINTO_WEBHOOK_URL=http://127.0.0.1:9/elsewhere"})
		wantBlocking(t, code, fs, out, doctor.CheckWebhook, "no webhook calls http://127.0.0.1:9/elsewhere")

		// Without the admin's credentials the hook cannot be read: a
		// warning that says what was not verified, and exit 0.
		code, fs, out = g.doctor(t, envFile, projects, []string{"FORGE_ADMIN_USER=", "FORGE_ADMIN_PASS="})
		if w := find(fs, doctor.CheckWebhook, doctor.Warning); code != exitOK || len(w) != 1 || !strings.Contains(w[0].Message, "not verified") {
			t.Errorf("without admin credentials: exit %d\n%s", code, out)
		}
	})

	// Last: it changes the forge.
	t.Run("branch protection", func(t *testing.T) {
		rc := g.srv.Admin(t).Repo("acme", "demo")
		if err := rc.SetBranchProtection(ctx, forge.Protection{Branch: "trunk", RequiredApprovals: 0,
			MergeWhitelist: []string{"dev-bot", "review-bot"}, PushWhitelist: []string{"dev-bot"}}); err != nil {
			t.Fatal(err)
		}
		code, fs, out := g.doctor(t, g.envFile, g.projects, nil)
		wantBlocking(t, code, fs, out, doctor.CheckProtection, "dev-bot may push to it directly")
		wantBlocking(t, code, fs, out, doctor.CheckProtection, "review-bot may merge")
		wantBlocking(t, code, fs, out, doctor.CheckProtection, "no approval is required")
	})
}

// TestDoctorExitCodes: usage errors exit 2, blocking findings 1,
// warnings alone 0; config check, the offline part, the same.
func TestDoctorExitCodes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "a.toml"), "name = \"a\"\nrepo = \"o/a\"\n")
	writeFile(t, filepath.Join(dir, "ok.env"), "")
	global := []string{"--projects-dir", filepath.Join(dir, "projects"), "--data-dir", filepath.Join(dir, "data")}
	for _, tc := range []struct {
		args []string
		env  []string
		want int
		says string
	}{
		{[]string{"doctor", "extra"}, nil, exitUsage, "unknown command"},
		{[]string{"doctor", "--no-such-flag"}, nil, exitUsage, "unknown flag"},
		{[]string{"config", "check", "extra"}, nil, exitUsage, "unknown command"},
		{[]string{"config", "check", "--json", "--no-such-flag"}, nil, exitUsage, "unknown flag"},
		{[]string{"config", "check"}, nil, exitOK, "OK       config"},
		// A missing env file that was named blocks both.
		{[]string{"config", "check"}, []string{"DISINTO_ENV_FILE=" + filepath.Join(dir, "absent.env")}, exitFailure, "BLOCKING env-file"},
		{[]string{"doctor"}, []string{"DISINTO_ENV_FILE=" + filepath.Join(dir, "absent.env")}, exitFailure, "BLOCKING env-file"},
		// The forge (o/a's default, localhost:3000, or a closed port)
		// cannot be reached: doctor blocks, config check does not look.
		{[]string{"doctor"}, []string{"FORGE_URL=http://127.0.0.1:1"}, exitFailure, "BLOCKING forge http://127.0.0.1:1: unreachable"},
		{[]string{"config", "check"}, []string{"FORGE_URL=http://127.0.0.1:1"}, exitOK, "0 blocking"},
		// A status token long enough is no problem.
		{[]string{"config", "check"}, []string{"DISINTO_STATUS_TOKEN=0123456789abcdef0123"}, exitOK, "0 blocking"},
	} {
		env := append([]string{"DISINTO_ENV_FILE=" + filepath.Join(dir, "ok.env")}, tc.env...)
		code, out, errOut := runCLI(t, env, append(append([]string{}, tc.args...), global...)...)
		if code != tc.want || !strings.Contains(out+errOut, tc.says) {
			t.Errorf("disinto %s: code %d, want %d saying %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.want, tc.says, out, errOut)
		}
	}
}

// TestConfigCheckJSON: --json prints lists, never null, and counts the
// blocking findings.
func TestConfigCheckJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "a.toml"), "name = \"a\"\nrepo = 7\ncolour = 1\n")
	code, out, _ := runCLI(t, nil, "config", "check", "--json", "--projects-dir", filepath.Join(dir, "projects"), "--data-dir", filepath.Join(dir, "data"))
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fs, ok := rep["findings"].([]any)
	if code != exitFailure || !ok || rep["blocking"] != float64(2) {
		t.Errorf("exit %d, report %s", code, out)
	}
	for _, f := range fs {
		if f.(map[string]any)["fix"] == nil {
			t.Errorf("finding without a fix field: %v", f)
		}
	}
}
