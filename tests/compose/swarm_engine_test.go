package compose_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/shard"
)

// swarmBaseImage runs the disinto binary the test builds: the stack's
// own image would take a build of its own, and what is under test here is
// the stack file on a real swarm, not the image.
const swarmBaseImage = "debian:bookworm-slim"

// replicaLineRe is the line `disinto status` prints on a replica.
var replicaLineRe = regexp.MustCompile(`replica: slot (\d+) of (\d+), owns \d+ of (\d+) projects: (.*)`)

// TestSwarmStackSplitsProjectsBySlot deploys deploy/swarm/docker-stack.yml
// on a single-node swarm, each agent replica running `disinto status`
// (with the binary built here): Swarm gives each replica its slot, the
// secret env file and the project files as configs reach it, each slot has
// a volume of its own, and the replicas own every project once, as
// lib/shard assigns them. Deployed again with 2 replicas, only the
// projects of the replica that went away move.
func TestSwarmStackSplitsProjectsBySlot(t *testing.T) {
	if testing.Short() {
		t.Skip("swarm test: skipped under -short")
	}
	requireEngine(t, swarmBaseImage)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, dir := repoRoot(t), t.TempDir()
	env := baseEnv()
	docker := func(args ...string) string {
		t.Helper()
		out, err := run(ctx, dir, env, "docker", args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	bin := filepath.Join(dir, "bin")
	if out, err := run(ctx, root, append(os.Environ(), "CGO_ENABLED=0"), "go", "build", "-o", filepath.Join(bin, "disinto"), "./cmd/disinto"); err != nil {
		t.Fatalf("build disinto: %v\n%s", err, out)
	}

	if state := strings.TrimSpace(docker("info", "--format", "{{.Swarm.LocalNodeState}}")); state != "active" {
		docker("swarm", "init", "--advertise-addr", "127.0.0.1")
		t.Cleanup(func() {
			_, _ = run(context.Background(), dir, env, "docker", "swarm", "leave", "--force")
			// The bridge swarm mode made; the engine keeps it after leaving.
			_, _ = run(context.Background(), dir, env, "docker", "network", "rm", "docker_gwbridge")
		})
	}

	name := fmt.Sprintf("swt%d", os.Getpid())
	projects := []string{"example"}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stackFile, err := os.ReadFile(filepath.Join(root, swarmStackFile))
	if err != nil {
		t.Fatal(err)
	}
	// The agents' health check asks the daemon's /readyz with wget, which
	// neither the base image nor `disinto status` has. An override
	// cannot replace it (the CLI appends the lists of test), so the copy
	// deployed here turns it off.
	health := regexp.MustCompile(`(?m)^    healthcheck: \{test: \["CMD", "wget", [^\n]*127\.0\.0\.1:8080/readyz[^\n]*$`)
	if len(health.FindAllString(string(stackFile), -1)) != 1 {
		t.Fatalf("%s: the agents' health check is not the one line this test expects", swarmStackFile)
	}
	write(swarmStackFile, health.ReplaceAllString(string(stackFile), "    healthcheck: {disable: true}"))
	write("projects/example.toml", "name = \"example\"\nrepo = \"o/example\"\n")
	var configs, mounts strings.Builder
	for i := range 6 {
		p := fmt.Sprintf("p%d", i)
		projects = append(projects, p)
		write("projects/"+p+".toml", fmt.Sprintf("name = %q\nrepo = \"o/%s\"\n", p, p))
		fmt.Fprintf(&configs, "  %s: {file: %s}\n", p, filepath.Join(dir, "projects", p+".toml"))
		fmt.Fprintf(&mounts, "      - {source: %s, target: /etc/disinto/projects/%s.toml}\n", p, p)
	}
	write("override.yml", `services:
  agents:
    image: `+swarmBaseImage+`
    # Each replica prints its status once and then stays up, as the
    # daemon does: a rolling update replaces running tasks, while tasks
    # that already exited are left to the restart policy.
    entrypoint: ["/bin/sh", "-c"]
    command: ["trap 'exit 0' TERM INT; /opt/disinto/disinto status; while :; do sleep 1; done"]
    stop_grace_period: 10s
    volumes:
      - {type: bind, source: `+bin+`, target: /opt/disinto, read_only: true}
    configs:
`+mounts.String()+`    deploy:
      restart_policy: {condition: none}
  gateway:
    deploy:
      replicas: 0
configs:
`+configs.String()+`volumes:
  agent-data:
    name: '`+name+`-data-{{.Task.Slot}}'
secrets:
  disinto_env: {name: `+name+`_env, external: true}
  disinto_gateway_env: {name: `+name+`_gateway_env, external: true}
`)
	write("secret.env", "DISINTO_STATUS_TOKEN=0123456789abcdef0123\n")
	for _, s := range []string{name + "_env", name + "_gateway_env"} {
		docker("secret", "create", s, filepath.Join(dir, "secret.env"))
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer ccancel()
		if t.Failed() {
			out, _ := run(cctx, dir, env, "docker", "service", "logs", "--no-task-ids", name+"_agents")
			t.Logf("agents' logs:\n%s", tail(out, 60))
		}
		_, _ = run(cctx, dir, env, "docker", "stack", "rm", name)
		for cctx.Err() == nil {
			out, _ := run(cctx, dir, env, "docker", "ps", "-aq", "--filter", "label=com.docker.stack.namespace="+name)
			if strings.TrimSpace(out) == "" {
				break
			}
			time.Sleep(time.Second)
		}
		_, _ = run(cctx, dir, env, "docker", "secret", "rm", name+"_env", name+"_gateway_env")
		for slot := 1; slot <= 3; slot++ {
			_, _ = run(cctx, dir, env, "docker", "volume", "rm", fmt.Sprintf("%s-data-%d", name, slot))
		}
	})

	hookPort := strconv.Itoa(freePort(t))
	deploy := func(n int) map[int][]string {
		t.Helper()
		denv := append(slices.Clone(env), "FORGE_URL=http://forge.invalid", "DISINTO_REPLICAS="+strconv.Itoa(n), "DISINTO_HOOK_PORT="+hookPort)
		if out, err := run(ctx, dir, denv, "docker", "stack", "deploy", "-c", swarmStackFile, "-c", "override.yml", name); err != nil {
			t.Fatalf("stack deploy: %v\n%s", err, out)
		}
		owned := map[int][]string{}
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
			out, _ := run(ctx, dir, env, "docker", "service", "logs", "--raw", name+"_agents")
			for _, m := range replicaLineRe.FindAllStringSubmatch(out, -1) {
				slot, _ := strconv.Atoi(m[1])
				if m[2] != strconv.Itoa(n) || m[3] != strconv.Itoa(len(projects)) {
					continue
				}
				owned[slot] = nil
				if m[4] != "-" {
					owned[slot] = strings.Split(m[4], ", ")
				}
			}
			if len(owned) == n {
				return owned
			}
			time.Sleep(2 * time.Second)
		}
		tasks, _ := run(ctx, dir, env, "docker", "service", "ps", "--no-trunc", name+"_agents")
		update, _ := run(ctx, dir, env, "docker", "service", "inspect", "--format", "{{json .UpdateStatus}}", name+"_agents")
		t.Fatalf("with %d replicas, only slots %v said what they own; update: %s tasks:\n%s", n, owned, strings.TrimSpace(update), tasks)
		return nil
	}
	check := func(n int, owned map[int][]string) {
		t.Helper()
		count := map[string]int{}
		for slot, ps := range owned {
			for _, p := range ps {
				count[p]++
				if want := shard.Owner(p, n); want != slot {
					t.Errorf("%d replicas: slot %d owns %s, which lib/shard gives slot %d", n, slot, p, want)
				}
			}
		}
		for _, p := range projects {
			if count[p] != 1 {
				t.Errorf("%d replicas: project %s owned %d times: %v", n, p, count[p], owned)
			}
		}
	}

	three := deploy(3)
	check(3, three)
	for slot := 1; slot <= 3; slot++ {
		docker("volume", "inspect", fmt.Sprintf("%s-data-%d", name, slot))
	}
	two := deploy(2)
	check(2, two)
	for slot := 1; slot <= 2; slot++ {
		for _, p := range three[slot] {
			if !slices.Contains(two[slot], p) {
				t.Errorf("going 3 → 2 moved %s off slot %d, which stayed", p, slot)
			}
		}
	}
}
