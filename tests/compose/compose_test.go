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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// stackVars are the env-file values of a test stack: the user's required
// inputs (project, credentials) and the test image names.
func stackVars(t *testing.T) map[string]string {
	return map[string]string{
		"PROJECT_REPO":         "disinto-admin/demo",
		"FORGE_ADMIN_PASS":     "stack-test-admin-1",
		"CLAUDE_CONFIG_DIR":    sharedClaudeDir(t),
		"DISINTO_AGENTS_IMAGE": testAgentImage,
	}
}

// TestStackForgeProvisionsAndKeepsState brings up the forge half of the
// stack from the product file (+ test override): the forge becomes healthy,
// the one-shot admin step creates the admin with the .env password, and
// after `down` (without -v) and `up` again the admin step succeeds without
// touching existing data.
func TestStackForgeProvisionsAndKeepsState(t *testing.T) {
	if testing.Short() {
		t.Skip("compose stack test: skipped under -short")
	}
	requireEngine(t, testForgeImage, "debian:bookworm-slim", "golang:1.26-bookworm")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	vars := stackVars(t)
	s := newStack(t, vars)
	s.must(ctx, "build", "provision")

	s.must(ctx, "up", "--detach", "forgejo-admin")
	s.waitHealthy(ctx, "forgejo")
	s.waitExited(ctx, "forgejo-admin")

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
	expect(http.MethodGet, "/api/v1/version", "", http.StatusOK)
	expect(http.MethodGet, "/api/v1/user", "", http.StatusOK)
	expect(http.MethodPost, "/api/v1/user/repos", `{"name":"survives-restart","auto_init":true}`, http.StatusCreated)

	// Restart the stack keeping its volumes: the admin step runs again on
	// the existing data and must leave it intact.
	s.must(ctx, "down", "--timeout", "10")
	s.must(ctx, "up", "--detach", "forgejo-admin")
	s.waitHealthy(ctx, "forgejo")
	s.waitExited(ctx, "forgejo-admin")
	forge = s.forgeURL(ctx)
	expect(http.MethodGet, "/api/v1/user", "", http.StatusOK)
	expect(http.MethodGet, "/api/v1/repos/disinto-admin/survives-restart", "", http.StatusOK)
	logs := s.must(ctx, "logs", "--no-color", "forgejo-admin")
	if !strings.Contains(logs, "admin disinto-admin exists") {
		t.Errorf("second start did not find the existing admin:\n%s", tail(logs, 20))
	}
}

// TestStackAgentsWorkBacklogIssue is the whole product path: provisioning
// with `disinto init`, the agents container running `disinto daemon`, and a
// backlog issue turned into a PR by the dev agent against the scripted model.
func TestStackAgentsWorkBacklogIssue(t *testing.T) {
	if testing.Short() {
		t.Skip("compose stack test: skipped under -short")
	}
	requireEngine(t, testForgeImage, "debian:bookworm-slim", "golang:1.26-bookworm")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	s := newStack(t, stackVars(t))
	s.must(ctx, "build", "provision")
	for _, cmd := range [][]string{{"init", "--help"}, {"daemon", "--help"}} {
		if !imageRuns(ctx, testAgentImage, cmd...) {
			t.Skip(fmt.Sprintf("PENDING: the agents image has no `disinto %s` yet; this test runs once it lands", cmd[0]))
		}
	}
	if _, err := os.Stat(filepath.Join(s.root, "tests", "modelserver")); err != nil {
		t.Skip("PENDING: tests/modelserver (the scripted model server as a program) does not exist yet; the dev-agent step needs it as the modelserver service")
	}
	t.Fatal("PENDING: wire the modelserver image and the dev scenario, then: up -d --profile model; wait agents healthy; label a backlog issue; wait for the PR")
}
