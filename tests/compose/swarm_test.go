package compose_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const swarmStackFile = "deploy/swarm/docker-stack.yml"

// swarmStack is the part of the Swarm stack file the tests read.
type swarmStack struct {
	Services map[string]struct {
		Image       string             `yaml:"image"`
		Command     []string           `yaml:"command"`
		Environment map[string]*string `yaml:"environment"`
		Ports       []any              `yaml:"ports"`
		Volumes     []string           `yaml:"volumes"`
		Secrets     []struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
			Mode   string `yaml:"mode"`
		} `yaml:"secrets"`
		Deploy struct {
			Replicas     string `yaml:"replicas"`
			UpdateConfig struct {
				Order string `yaml:"order"`
			} `yaml:"update_config"`
		} `yaml:"deploy"`
	} `yaml:"services"`
	Volumes map[string]*struct {
		Name string `yaml:"name"`
	} `yaml:"volumes"`
	Secrets map[string]struct {
		External bool `yaml:"external"`
	} `yaml:"secrets"`
}

func readSwarmStack(t *testing.T, root string) swarmStack {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, swarmStackFile))
	if err != nil {
		t.Fatal(err)
	}
	var s swarmStack
	if err := yaml.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", swarmStackFile, err)
	}
	return s
}

// TestSwarmStackShardsBySlot: the Swarm stack runs the agents as replicas
// that learn their slot from Swarm and the count from the same value as
// the service's replica count, each with a volume of its own; the
// gateway is a service of its own that publishes nothing; the agents hold
// no model credential; secrets are Swarm secrets only root can read; both
// run the image the compose file builds; and every variable the stack
// hands the containers is one the code reads.
func TestSwarmStackShardsBySlot(t *testing.T) {
	root := repoRoot(t)
	s := readSwarmStack(t, root)
	agents, ok := s.Services["agents"]
	if !ok {
		t.Fatal("no agents service")
	}
	gw, ok := s.Services["gateway"]
	if !ok || len(gw.Command) == 0 || gw.Command[0] != "gateway" || len(gw.Ports) > 0 {
		t.Errorf("the gateway must be its own service running `gateway`, publishing no port: %+v", gw)
	}
	env := func(k string) string {
		if v := agents.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	if env("DISINTO_REPLICA_SLOT") != "{{.Task.Slot}}" {
		t.Errorf("agents: DISINTO_REPLICA_SLOT = %q, want Swarm's {{.Task.Slot}}", env("DISINTO_REPLICA_SLOT"))
	}
	if n := env("DISINTO_REPLICAS"); !strings.HasPrefix(n, "${DISINTO_REPLICAS") || n != agents.Deploy.Replicas {
		t.Errorf("agents: DISINTO_REPLICAS = %q and deploy.replicas = %q: both must come from ${DISINTO_REPLICAS}", n, agents.Deploy.Replicas)
	}
	if !strings.HasPrefix(env("DISINTO_GATEWAY_URL"), "http://gateway:") {
		t.Errorf("agents: DISINTO_GATEWAY_URL = %q, want the gateway service", env("DISINTO_GATEWAY_URL"))
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"} {
		if _, ok := agents.Environment[k]; ok {
			t.Errorf("agents get %s: the model credentials belong to the gateway", k)
		}
	}
	if agents.Deploy.UpdateConfig.Order != "stop-first" {
		t.Errorf("agents: update order %q, want stop-first (a slot never runs twice)", agents.Deploy.UpdateConfig.Order)
	}
	perSlot := false
	for _, v := range agents.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if dst == "/home/agent/data" {
			vol := s.Volumes[src]
			perSlot = vol != nil && strings.Contains(vol.Name, "{{.Task.Slot}}")
		}
	}
	if !perSlot {
		t.Errorf("agents: the data dir is not on a volume named by {{.Task.Slot}}: %v %v", agents.Volumes, s.Volumes)
	}

	raw, _ := composeEnv(t, root)
	reads := goReads(t, root)
	for name, svc := range s.Services {
		if !strings.Contains(raw, "image: "+svc.Image) {
			t.Errorf("%s: image %q is not the one docker-compose.yml builds", name, svc.Image)
		}
		if len(svc.Secrets) == 0 {
			t.Errorf("%s: no Swarm secret", name)
		}
		for _, sec := range svc.Secrets {
			if sec.Mode != "0400" || !s.Secrets[sec.Source].External {
				t.Errorf("%s: secret %s: mode %q, external %v; want 0400 (the env file check refuses others) and created with docker secret create",
					name, sec.Source, sec.Mode, s.Secrets[sec.Source].External)
			}
			if svc.Environment["DISINTO_ENV_FILE"] == nil || *svc.Environment["DISINTO_ENV_FILE"] != "/run/secrets/"+sec.Target {
				t.Errorf("%s: DISINTO_ENV_FILE does not name its secret %s", name, sec.Target)
			}
		}
		for k := range svc.Environment {
			if !reads(k) {
				t.Errorf("%s: %s is passed, but no code reads it", name, k)
			}
		}
	}
}

// TestSwarmStackConfig: docker's own loader accepts the stack file (no
// engine needed), with the project file it names in place.
func TestSwarmStackConfig(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	stack := filepath.Join(dir, filepath.FromSlash(swarmStackFile))
	if err := os.MkdirAll(filepath.Dir(stack), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, swarmStackFile))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(root, "projects", "example.toml.example"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stack, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "projects", "example.toml"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "stack", "config", "-c", stack)
	cmd.Env = append(baseEnv(), "FORGE_URL=https://forge.example.org", "DISINTO_REPLICAS=4")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "unknown command") || strings.Contains(string(out), "is not a docker command") {
			t.Skipf("this docker CLI has no `stack config`: %s", out)
		}
		t.Fatalf("docker stack config: %v\n%s", err, out)
	}
	for _, want := range []string{"replicas: 4", `DISINTO_REPLICAS: "4"`, "DISINTO_REPLICA_SLOT: '{{.Task.Slot}}'", "mode: 256"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendered stack lacks %q:\n%s", want, out)
		}
	}
}
