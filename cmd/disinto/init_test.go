package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

func TestParseSlug(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"acme/widget", "acme/widget", true},
		{"https://forge.example/acme/widget.git", "acme/widget", true},
		{"http://forge.example:3000/acme/widget/", "acme/widget", true},
		{"http://localhost:3000/sub/acme/widget", "acme/widget", true},
		{"git@github.com:acme/widget.git", "", false},
		{"widget", "", false},
		{"acme/wid get", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSlug(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseSlug(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

func TestInitMissingFlagsIsUsageError(t *testing.T) {
	dir := t.TempDir()
	base := []string{"init", "--yes", "--env-file", filepath.Join(dir, ".env"), "--projects-dir", dir}
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no forge", nil, nil, "--forge-url"},
		{"no admin", []string{"FORGE_URL=http://127.0.0.1:1"}, nil, "--admin-user"},
		{"no password", []string{"FORGE_URL=http://127.0.0.1:1", "FORGE_ADMIN_USER=root"}, nil, "--admin-password"},
		{"no repo", []string{"FORGE_URL=http://127.0.0.1:1", "FORGE_ADMIN_USER=root", "FORGE_ADMIN_PASS=secret-pass"}, nil, "--repo"},
		{"bad repo", []string{"FORGE_URL=http://127.0.0.1:1", "FORGE_ADMIN_TOKEN=tok"}, []string{"git@x:a/b"}, "SSH URLs"},
		{"bad local bot", []string{"FORGE_URL=http://127.0.0.1:1", "FORGE_ADMIN_TOKEN=tok"}, []string{"a/b", "--local-bot", "llama"}, "want NAME=LOGIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.env, append(base, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("code %d, stderr %q; want exit 2 naming %s", code, errOut, tt.want)
			}
		})
	}
}

// gitRepo makes a repository with one commit on branch trunk.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "trunk"},
		{"-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "--allow-empty", "-m", "first"},
		{"tag", "v0.1.0"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

func TestInitAgainstRealForge(t *testing.T) {
	srv := forgetest.Start(t)
	dir := t.TempDir()
	envFile, projects := filepath.Join(dir, "config", ".env"), filepath.Join(dir, "config", "projects")
	env := []string{"FORGE_URL=" + srv.URL, "FORGE_ADMIN_USER=" + srv.AdminLogin, "FORGE_ADMIN_PASS=" + srv.AdminPassword}
	args := []string{"init", "--yes", "--repo", "acme/demo", "--source", gitRepo(t), "--local-bot", "llama=dev-qwen",
		"--projects-dir", projects, "--env-file", envFile, "--webhook-url", "http://127.0.0.1:9/hooks/forgejo"}

	code, out, errOut := runCLI(t, env, args...)
	if code != exitOK {
		t.Fatalf("init: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("first run:\n%s%s", out, errOut)
	for _, want := range []string{"dev-bot", "dev-qwen", "FORGE_TOKEN_LLAMA", "created", "acme/demo-ops", "protection", "merge: dev-bot,dev-qwen", "webhook"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	noSecrets(t, envFile, srv.AdminPassword, out, errOut)

	st, err := os.Stat(envFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("env file: %v %v", st, err)
	}
	code, out2, errOut2 := runCLI(t, nil, "config", "check", "--projects-dir", projects, "--env-file", envFile)
	if code != exitOK {
		t.Fatalf("config check: %d\n%s\n%s", code, out2, errOut2)
	}
	cfg, err := config.Load(projects, envFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Projects[0].PrimaryBranch; b != "trunk" {
		t.Errorf("primary branch %q, want the source's trunk", b)
	}
	dev, _ := cfg.Bot(config.RoleDev)
	rc := srv.Client(t, dev.Token, dev.User).Repo("acme", "demo")
	if _, err := rc.GetBranch(context.Background(), "trunk"); err != nil {
		t.Errorf("source not pushed: %v", err)
	}
	if pr, err := rc.GetBranchProtection(context.Background(), "trunk"); err == nil {
		t.Errorf("dev-bot can read protection (needs admin): %+v", pr)
	}
	if pr, err := srv.Admin(t).Repo("acme", "demo").GetBranchProtection(context.Background(), "trunk"); err != nil || pr.RequiredApprovals != 1 {
		t.Errorf("protection of trunk: %+v %v", pr, err)
	}

	code, out, errOut = runCLI(t, env, args...)
	if code != exitOK {
		t.Fatalf("re-run: code %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "nothing changed") || strings.Contains(out, string(" created ")) || strings.Contains(out, " updated ") {
		t.Errorf("re-run changed something:\n%s", out)
	}
	t.Logf("second run:\n%s%s", out, errOut)
	if !strings.Contains(out, "already present") {
		t.Errorf("re-run does not report items as already present:\n%s", out)
	}
	noSecrets(t, envFile, srv.AdminPassword, out, errOut)

	// A token that no longer exists on the forge is replaced, and says so.
	data, _ := os.ReadFile(envFile)
	broken := strings.Replace(string(data), "FORGE_SUPERVISOR_TOKEN=", "FORGE_SUPERVISOR_TOKEN=x", 1)
	if err := os.WriteFile(envFile, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, env, append(args, "--debug")...)
	if code != exitOK || !strings.Contains(out, "new token") {
		t.Errorf("repair: code %d\n%s\n%s", code, out, errOut)
	}
	noSecrets(t, envFile, srv.AdminPassword, out, errOut)
	cfg, _ = config.Load(projects, envFile, nil)
	sup, _ := cfg.Bot(config.RoleSupervisor)
	if me, err := srv.Client(t, sup.Token, sup.User).Me(context.Background()); err != nil || me.Login != "supervisor-bot" {
		t.Errorf("repaired supervisor token: %v %v", me, err)
	}
}

func TestInitBadAdminPasswordNamesTheCall(t *testing.T) {
	srv := forgetest.Start(t)
	dir := t.TempDir()
	env := []string{"FORGE_URL=" + srv.URL, "FORGE_ADMIN_USER=" + srv.AdminLogin, "FORGE_ADMIN_PASS=wrong-password-123"}
	code, out, errOut := runCLI(t, env, "init", "--yes", "--repo", "acme/demo",
		"--projects-dir", filepath.Join(dir, "p"), "--env-file", filepath.Join(dir, ".env"))
	if code != exitFailure || !strings.Contains(errOut, "GET /api/v1/user") || !strings.Contains(errOut, "401") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, "wrong-password-123") {
		t.Error("the password reached the output")
	}
	if _, err := os.Stat(filepath.Join(dir, ".env")); err == nil {
		t.Error("env file written although nothing was provisioned")
	}
}

// noSecrets fails when any secret of the env file, or the admin password,
// appears in the output.
func noSecrets(t *testing.T, envFile, adminPass string, outputs ...string) {
	t.Helper()
	vals, err := config.ReadEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{adminPass}
	n := 0
	for k, v := range vals {
		if config.IsSecretName(k) && v != "" {
			secrets = append(secrets, v)
			n++
		}
	}
	if n < 21 {
		t.Errorf("env file holds %d secrets, want at least 21 (10 tokens, 10 passwords, webhook secret)", n)
	}
	for _, o := range outputs {
		for _, s := range secrets {
			if strings.Contains(o, s) {
				t.Errorf("a secret appears in the output")
			}
		}
	}
}

// scripted answers prompts in order and records the labels.
type scripted struct {
	answers []string
	asked   []string
	secret  []bool
}

func (s *scripted) Ask(label string, secret bool) (string, error) {
	s.asked, s.secret = append(s.asked, label), append(s.secret, secret)
	if len(s.answers) == 0 {
		return "", nil
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func TestInitPromptsForMissingValues(t *testing.T) {
	f := &initFlags{forgeURL: "http://forge"}
	ask := &scripted{answers: []string{"root", "pw-123456", "acme/demo"}}
	if err := f.complete(ask); err != nil {
		t.Fatal(err)
	}
	if f.adminUser != "root" || f.adminPass != "pw-123456" || f.repo != "acme/demo" {
		t.Errorf("flags %+v", f)
	}
	if len(ask.asked) != 3 || ask.secret[0] || !ask.secret[1] || ask.secret[2] {
		t.Errorf("asked %q secret %v", ask.asked, ask.secret)
	}

	// With a token, no user or password is asked for; an empty answer is
	// a usage error naming the flag.
	f = &initFlags{forgeURL: "http://forge", adminToken: "tok"}
	err := f.complete(&scripted{})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--repo") {
		t.Errorf("err = %v, want a usage error naming --repo", err)
	}
}

func TestInitUnreachableForgeGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	_ = l.Close()
	dir := t.TempDir()
	env := []string{"FORGE_URL=" + url, "FORGE_ADMIN_USER=root", "FORGE_ADMIN_PASS=secret-pass-1"}
	code, _, errOut := runCLI(t, env, "init", "--yes", "--repo", "acme/demo", "--wait-forge", "300ms",
		"--projects-dir", dir, "--env-file", filepath.Join(dir, ".env"))
	if code != exitFailure || !strings.Contains(errOut, "did not answer within 300ms") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// TestInitRefusesThePlaceholderPassword: `disinto init` run with the
// admin password .env.example ships exits non-zero with one line naming
// .env, before it reaches the forge (the URL is a closed port) or writes a
// file.
func TestInitRefusesThePlaceholderPassword(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, ".env")
	writeFile(t, envFile, "FORGE_URL=http://127.0.0.1:1\nFORGE_ADMIN_USER=root\nFORGE_ADMIN_PASS="+provision.PlaceholderAdminPassword+"\n")
	before, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, nil, "init", "--yes", "--repo", "acme/demo", "--wait-forge", "0",
		"--projects-dir", filepath.Join(dir, "p"), "--env-file", envFile)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != exitFailure || len(lines) != 1 || !strings.Contains(errOut, ".env") || !strings.Contains(errOut, "FORGE_ADMIN_PASS") {
		t.Errorf("code %d, stderr %q; want exit 1 and one line naming .env and FORGE_ADMIN_PASS", code, errOut)
	}
	if strings.Contains(out, provision.PlaceholderAdminPassword) {
		t.Error("the password reached the output")
	}
	after, err := os.ReadFile(envFile)
	if err != nil || string(after) != string(before) {
		t.Errorf("env file changed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p")); err == nil {
		t.Error("projects dir written")
	}
}
