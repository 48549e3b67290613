// Package compose_test proves the product docker-compose.yml: it validates
// with only the documented .env.example values, and the stack it describes
// comes up on a real Docker engine (with the test override swapping in the
// local forge and model stand-ins), provisions itself, keeps its state
// across restarts and, once provisioned, works issues.
//
// Setup: tests/setup/docker.sh (engine, Compose v2, local images). The
// engine tests fail with that instruction when no engine answers; they are
// skipped only under -short.
package compose_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

// productConfig runs `docker compose config` on the product file alone with
// the given env file.
func productConfig(ctx context.Context, root, envFile string, args ...string) (string, error) {
	full := append([]string{
		"compose",
		"--project-name", "disinto-config-check",
		"--project-directory", root,
		"--env-file", envFile,
		"-f", filepath.Join(root, "docker-compose.yml"),
	}, args...)
	return run(ctx, root, baseEnv(), "docker", full...)
}

// envWithout is .env.example minus the assignments of the given keys.
func envWithout(t *testing.T, example string, drop ...string) string {
	t.Helper()
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(data), "\n") {
		skip := false
		for _, k := range drop {
			if strings.HasPrefix(line, k+"=") {
				skip = true
			}
		}
		if !skip {
			keep = append(keep, line)
		}
	}
	p := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProductConfigValidatesWithEnvExample(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	example := filepath.Join(root, ".env.example")

	tests := []struct {
		name     string
		env      string
		args     []string
		wantErr  string   // substring of the error output, "" for success
		services []string // services `config --services` must list
		absent   []string // services it must not list
	}{
		{
			name:     "example values",
			env:      example,
			args:     []string{"config", "--services"},
			services: []string{"forgejo", "forgejo-admin", "provision", "agents"},
			absent:   []string{"agents-llama"},
		},
		{
			name:     "llama profile",
			env:      example,
			args:     []string{"--profile", "llama", "config", "--services"},
			services: []string{"agents", "agents-llama"},
		},
		{
			name: "example values, full model",
			env:  example,
			args: []string{"config", "--quiet"},
		},
		{
			name:    "no project",
			env:     envWithout(t, example, "PROJECT_REPO"),
			args:    []string{"config", "--quiet"},
			wantErr: "PROJECT_REPO",
		},
		{
			name:    "no admin password",
			env:     envWithout(t, example, "FORGE_ADMIN_PASS"),
			args:    []string{"config", "--quiet"},
			wantErr: "FORGE_ADMIN_PASS",
		},
		{
			name:    "no status token",
			env:     envWithout(t, example, "DISINTO_STATUS_TOKEN"),
			args:    []string{"config", "--quiet"},
			wantErr: "DISINTO_STATUS_TOKEN",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := productConfig(ctx, root, tc.env, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(out, tc.wantErr) {
					t.Fatalf("want an error naming %s, got err=%v output:\n%s", tc.wantErr, err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, s := range strings.Fields(out) {
				got[s] = true
			}
			for _, s := range tc.services {
				if !got[s] {
					t.Errorf("service %s missing from:\n%s", s, out)
				}
			}
			for _, s := range tc.absent {
				if got[s] {
					t.Errorf("service %s listed without its profile:\n%s", s, out)
				}
			}
		})
	}
}

// TestProductConfigBuildsAndRotates: the agents image is always built
// from the checkout (never pulled under its name), every service's logs
// rotate, and .env.example pins nothing the compose file defaults.
func TestProductConfigBuildsAndRotates(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := productConfig(ctx, root, filepath.Join(root, ".env.example"), "--profile", "llama", "config", "--format", "json")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]struct {
			PullPolicy string `json:"pull_policy"`
			Build      any    `json:"build"`
			Logging    struct {
				Driver  string            `json:"driver"`
				Options map[string]string `json:"options"`
			} `json:"logging"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("config JSON: %v\n%s", err, out)
	}
	for _, name := range []string{"forgejo", "forgejo-admin", "provision", "agents", "agents-llama"} {
		svc, ok := cfg.Services[name]
		if !ok {
			t.Fatalf("service %s missing", name)
		}
		if svc.Logging.Driver != "json-file" || svc.Logging.Options["max-size"] == "" || svc.Logging.Options["max-file"] == "" {
			t.Errorf("%s: logs do not rotate: %+v", name, svc.Logging)
		}
		if svc.Build != nil && svc.PullPolicy != "build" {
			t.Errorf("%s: built image with pull_policy %q, want build", name, svc.PullPolicy)
		}
	}
	example, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(example), "\n") {
		for _, k := range []string{"FORGEJO_IMAGE", "DISINTO_AGENTS_IMAGE", "CLAUDE_CODE_VERSION"} {
			if strings.HasPrefix(line, k+"=") {
				t.Errorf(".env.example pins %s, which docker-compose.yml defaults: %s", k, line)
			}
		}
	}
}

// stackVars are the env-file values of a test stack: the user's required
// inputs (project, credentials) and the test image names.
func stackVars(t *testing.T) map[string]string {
	return map[string]string{
		"PROJECT_REPO":                 "disinto-admin/demo",
		"FORGE_ADMIN_PASS":             "stack-test-admin-1",
		"CLAUDE_CONFIG_DIR":            sharedClaudeDir(t),
		"DISINTO_AGENTS_IMAGE":         testAgentImage,
		"DISINTO_TEST_MODELSERVER_DIR": t.TempDir(),
		"DISINTO_STATUS_TOKEN":         testStatusToken,
		"DISINTO_PROJECTS":             t.TempDir(),
	}
}

// TestStackForgeProvisionsAndKeepsState brings up the forge half of the
// stack from the product file (+ test override): the forge becomes healthy,
// the one-shot admin step creates the admin and a one-time token, with
// which provisioning gives the admin the .env password (never on a command
// line) before revoking it; after `down` (without -v) and `up` again both
// steps succeed without touching existing data.
func TestStackForgeProvisionsAndKeepsState(t *testing.T) {
	if testing.Short() {
		t.Skip("compose stack test: skipped under -short")
	}
	requireEngine(t, testForgeImage, "debian:bookworm-slim", "golang:1.26-bookworm")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	vars := stackVars(t)
	s := newStack(t, vars)
	// The provisioning image from this checkout (a warm machine may hold
	// an older one).
	s.must(ctx, "build", "provision")
	s.must(ctx, "up", "--detach", "provision")
	s.waitHealthy(ctx, "forgejo")
	s.waitExited(ctx, "forgejo-admin")
	s.waitExited(ctx, "provision")

	forge := s.forgeURL(ctx)
	admin, pass := "disinto-admin", vars["FORGE_ADMIN_PASS"]
	expect := func(method, path, body string, want int) {
		t.Helper()
		got, err := apiStatus(ctx, method, forge+path, admin, pass, body)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s %s: status %d, want %d", method, path, got, want)
		}
	}
	noBootstrapToken := func() {
		t.Helper()
		var toks []struct {
			Name string `json:"name"`
		}
		(&forgeAPI{base: forge, user: admin, pass: pass}).do(ctx, t, http.MethodGet, "/api/v1/users/"+admin+"/tokens", nil, &toks)
		for _, tk := range toks {
			if strings.HasPrefix(tk.Name, "disinto-bootstrap") {
				t.Errorf("the one-time admin token %s outlived provisioning", tk.Name)
			}
		}
	}
	expect(http.MethodGet, "/api/v1/version", "", http.StatusOK)
	expect(http.MethodGet, "/api/v1/user", "", http.StatusOK)
	noBootstrapToken()
	expect(http.MethodPost, "/api/v1/user/repos", `{"name":"survives-restart","auto_init":true}`, http.StatusCreated)

	// Restart the stack keeping its volumes: the admin step runs again on
	// the existing data and must leave it intact.
	s.must(ctx, "down", "--timeout", "10")
	s.must(ctx, "up", "--detach", "provision")
	s.waitHealthy(ctx, "forgejo")
	s.waitExited(ctx, "forgejo-admin")
	s.waitExited(ctx, "provision")
	forge = s.forgeURL(ctx)
	expect(http.MethodGet, "/api/v1/user", "", http.StatusOK)
	noBootstrapToken()
	expect(http.MethodGet, "/api/v1/repos/disinto-admin/survives-restart", "", http.StatusOK)
	logs := s.must(ctx, "logs", "--no-color", "forgejo-admin")
	if !strings.Contains(logs, "admin disinto-admin exists") {
		t.Errorf("second start did not find the existing admin:\n%s", tail(logs, 20))
	}
}

// TestStackAgentsWorkBacklogIssue is the whole product path as a user runs
// it: `up` provisions with `disinto init` and starts `disinto daemon`; a
// backlog issue becomes a PR opened by the dev agent in the agents
// container against the scripted model; `down` and `up` again keep every
// credential and the PR and open no second one.
func TestStackAgentsWorkBacklogIssue(t *testing.T) {
	if testing.Short() {
		t.Skip("compose stack test: skipped under -short")
	}
	requireEngine(t, testForgeImage, "debian:bookworm-slim", "golang:1.26-bookworm")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	vars := stackVars(t)
	s := newStack(t, vars)
	buildModelServer(ctx, t, vars["DISINTO_TEST_MODELSERVER_DIR"], claudetest.Scenario{
		Name: "stack-dev",
		Turns: []claudetest.Turn{
			// A session that goes looking for credentials, then commits
			// what it found (the daemon pushes it for the test to read).
			claudetest.Tools(claudetest.Bash(`{ id; env; cat /home/agent/data/disinto.env; ls -la /home/agent/data; ` +
				`ls -la /home/agent/data/sessions; cat /proc/1/environ; } >> PROBE.txt 2>&1; ` +
				`printf 'built in a container\n' >> STACK.md && git add STACK.md PROBE.txt && ` +
				`git commit -q -m "fix: add STACK.md (#$DISINTO_ISSUE)" && ` +
				`printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`)),
			claudetest.Text("Added STACK.md."),
		},
	})
	// Images from this checkout (a warm machine may hold older ones), then
	// exactly what the README's quick start runs.
	s.must(ctx, "build")
	s.must(ctx, "up", "--detach")
	s.waitExited(ctx, "provision")
	s.waitHealthy(ctx, "agents")
	creds := s.readDataFile(ctx, "disinto.env")

	api := &forgeAPI{base: s.forgeURL(ctx), user: "disinto-admin", pass: vars["FORGE_ADMIN_PASS"]}
	const repo = "/api/v1/repos/disinto-admin/demo"
	var labels []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	api.do(ctx, t, http.MethodGet, repo+"/labels?limit=50", nil, &labels)
	var backlog int64
	for _, l := range labels {
		if l.Name == "backlog" {
			backlog = l.ID
		}
	}
	if backlog == 0 {
		t.Fatalf("provisioning created no backlog label: %+v", labels)
	}
	var issue struct {
		Number int `json:"number"`
	}
	api.do(ctx, t, http.MethodPost, repo+"/issues", map[string]any{
		"title": "Add STACK.md",
		"body":  "scenario: stack-dev\n\nAdd a STACK.md file.",
	}, &issue)
	// The issue's branch already holds claude settings with a hook (main is
	// protected), so the session's checkout does: no session may load them.
	hook := `{"hooks":{"SessionStart":[{"matcher":"","hooks":[{"type":"command","command":"echo HOOK-RAN >> PROBE.txt"}]}]}}`
	api.do(ctx, t, http.MethodPost, repo+"/contents/.claude/settings.json", map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(hook)), "message": "project settings with a hook",
		"branch": "main", "new_branch": fmt.Sprintf("fix/issue-%d", issue.Number),
	}, nil)
	api.do(ctx, t, http.MethodPost, fmt.Sprintf("%s/issues/%d/labels", repo, issue.Number), map[string]any{"labels": []int64{backlog}}, nil)

	start := time.Now()
	branch := fmt.Sprintf("fix/issue-%d", issue.Number)
	pulls := func() []pull {
		var ps []pull
		api.do(ctx, t, http.MethodGet, repo+"/pulls?state=all&limit=50", nil, &ps)
		return ps
	}
	err := waitFor(ctx, 2*time.Second, "the dev agent's PR", func() (bool, error) {
		for _, p := range pulls() {
			if p.Head.Ref == branch {
				return true, nil
			}
		}
		return false, fmt.Errorf("no PR from %s yet", branch)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PR for issue #%d opened %s after labelling", issue.Number, time.Since(start).Round(100*time.Millisecond))
	// In the container too, the session was confined: its own uid, no
	// credential readable, no hook of the project's run.
	var file struct {
		Content string `json:"content"`
	}
	api.do(ctx, t, http.MethodGet, repo+"/contents/PROBE.txt?ref="+branch, nil, &file)
	probe, err := base64.StdEncoding.DecodeString(file.Content)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := strings.Cut(string(probe), "\n")
	t.Logf("the dev session in the container ran as: %s", id)
	checkProbe(t, string(probe), creds)
	logs := s.must(ctx, "logs", "--no-color", "agents")
	if !strings.Contains(logs, "daemon started") || !strings.Contains(logs, "dev") {
		t.Errorf("agents logs do not show the loop:\n%s", tail(logs, 30))
	}
	checkDoctorAndStatusPage(ctx, t, s, logs)

	// Restarting the agents keeps their state.
	s.must(ctx, "restart", "agents")
	s.waitHealthy(ctx, "agents")

	// Restart keeping the volumes: provisioning runs again and must change
	// nothing, the daemon comes back, and the issue gets no second PR.
	s.must(ctx, "down", "--timeout", "20")
	s.must(ctx, "up", "--detach")
	s.waitExited(ctx, "provision")
	s.waitHealthy(ctx, "agents")
	if again := s.readDataFile(ctx, "disinto.env"); again != creds {
		t.Error("restart changed the provisioned credentials")
	}
	api.base = s.forgeURL(ctx)
	n := 0
	for _, p := range pulls() {
		if p.Head.Ref == branch {
			n++
		}
	}
	if n != 1 {
		t.Errorf("after restart: %d PRs from %s, want 1", n, branch)
	}
}

// checkProbe fails t when what a session found holds a credential of the
// provisioned env file, ran as root, or shows that a project hook ran.
func checkProbe(t *testing.T, probe, creds string) {
	t.Helper()
	if !strings.Contains(probe, "uid=") || strings.Contains(probe, "uid=0(") || strings.Contains(probe, "uid=0 ") {
		t.Errorf("the session did not run under a uid of its own:\n%s", probe)
	}
	if !strings.Contains(probe, "disinto.env: Permission denied") {
		t.Errorf("the session could open the env file:\n%s", probe)
	}
	if strings.Contains(probe, "HOOK-RAN") {
		t.Error("a hook of the project's .claude/settings.json ran in the session")
	}
	for _, line := range strings.Split(creds, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && len(v) >= 8 && strings.Contains(probe, v) {
			t.Errorf("the session read %s", k)
		}
	}
}

type pull struct {
	Number int `json:"number"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// TestImagesCarryTheVersion: every image that builds the disinto binary
// takes DISINTO_VERSION as its build argument, so the version an operator
// sets (make images) is what the binaries report, and "dev" without one.
func TestImagesCarryTheVersion(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ env, want string }{{"DISINTO_VERSION=v9.8.7", "v9.8.7"}, {"", "dev"}} {
		env := baseEnv()
		if tc.env != "" {
			env = append(env, tc.env)
		}
		out, err := run(ctx, root, env, "docker", "compose", "--project-name", "disinto-config-check", "--project-directory", root,
			"--env-file", filepath.Join(root, ".env.example"), "-f", filepath.Join(root, "docker-compose.yml"),
			"--profile", "llama", "--profile", "edge", "--profile", "runner", "--profile", "gateway", "config", "--format", "json")
		if err != nil {
			t.Fatalf("config: %v\n%s", err, out)
		}
		var cfg struct {
			Services map[string]struct {
				Build *struct {
					Dockerfile string            `json:"dockerfile"`
					Args       map[string]string `json:"args"`
				} `json:"build"`
			} `json:"services"`
		}
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("config JSON: %v\n%s", err, out)
		}
		built := 0
		for name, svc := range cfg.Services {
			if svc.Build == nil || !slices.Contains([]string{"docker/agents/Dockerfile", "docker/edge/Dockerfile", "docker/runner/Dockerfile"}, svc.Build.Dockerfile) {
				continue
			}
			built++
			if got := svc.Build.Args["DISINTO_VERSION"]; got != tc.want {
				t.Errorf("%q: %s builds with DISINTO_VERSION %q, want %q", tc.env, name, got, tc.want)
			}
		}
		if built < 3 {
			t.Errorf("only %d services build the disinto binary; the check reads the wrong config", built)
		}
	}
}
