package compose_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDockerSocketIsOptIn: the product file mounts no Docker socket; the
// override that opts in mounts it into the agents service, names it in
// DOCKER_HOST and passes the stack's name to the supervisor.
func TestDockerSocketIsOptIn(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	env := filepath.Join(root, ".env.example")
	override := filepath.Join(root, "docker", "docker-socket.override.yml")
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"product file", nil, false},
		{"socket override", []string{"-f", override}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := productConfig(ctx, root, env, append(tc.args, "config", "--format", "json")...)
			if err != nil {
				t.Fatalf("config: %v\n%s", err, out)
			}
			var cfg struct {
				Services map[string]struct {
					Environment map[string]*string `json:"environment"`
					Volumes     []struct {
						Source string `json:"source"`
						Target string `json:"target"`
					} `json:"volumes"`
				} `json:"services"`
			}
			if err := json.Unmarshal([]byte(out), &cfg); err != nil {
				t.Fatalf("config JSON: %v", err)
			}
			for name, svc := range cfg.Services {
				mounted := false
				for _, v := range svc.Volumes {
					mounted = mounted || strings.HasSuffix(v.Source, "docker.sock")
				}
				want := tc.want && name == "agents"
				if mounted != want {
					t.Errorf("%s: socket mounted = %v, want %v", name, mounted, want)
				}
				if want {
					host, stack := svc.Environment["DOCKER_HOST"], svc.Environment["COMPOSE_PROJECT_NAME"]
					if host == nil || *host != "unix:///var/run/docker.sock" || stack == nil || *stack != "disinto-config-check" {
						t.Errorf("agents environment: DOCKER_HOST=%v COMPOSE_PROJECT_NAME=%v", deref(host), deref(stack))
					}
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
