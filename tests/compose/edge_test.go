package compose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// edgeImage is the edge image these tests build from the checkout.
const edgeImage = "edge-test/edge:test"

// TestProductConfigEdgeProfile: the edge and the chat exist only with the
// edge profile; both are built from the checkout, their logs rotate, the
// edge runs read-only without capabilities and publishes 80 and 443 on
// its unprivileged ports, and the chat publishes nothing.
func TestProductConfigEdgeProfile(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	example := filepath.Join(root, ".env.example")
	plain, err := productConfig(ctx, root, example, "config", "--services")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Fields(plain) {
		if s == "edge" || s == "chat" {
			t.Errorf("service %s listed without the edge profile", s)
		}
	}
	out, err := productConfig(ctx, root, example, "--profile", "edge", "config", "--format", "json")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]struct {
			PullPolicy string             `json:"pull_policy"`
			Build      any                `json:"build"`
			ReadOnly   bool               `json:"read_only"`
			CapDrop    []string           `json:"cap_drop"`
			Command    []string           `json:"command"`
			Env        map[string]*string `json:"environment"`
			Ports      []struct {
				Target    int    `json:"target"`
				Published string `json:"published"`
			} `json:"ports"`
			Logging struct {
				Driver string `json:"driver"`
			} `json:"logging"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("config JSON: %v", err)
	}
	edge, chat := cfg.Services["edge"], cfg.Services["chat"]
	for name, svc := range map[string]struct {
		pull, driver string
		build        any
	}{"edge": {edge.PullPolicy, edge.Logging.Driver, edge.Build}, "chat": {chat.PullPolicy, chat.Logging.Driver, chat.Build}} {
		if svc.build == nil || svc.pull != "build" || svc.driver != "json-file" {
			t.Errorf("%s: build %v, pull_policy %q, logging %q", name, svc.build, svc.pull, svc.driver)
		}
	}
	if !edge.ReadOnly || strings.Join(edge.CapDrop, ",") != "ALL" {
		t.Errorf("edge: read_only %v, cap_drop %v", edge.ReadOnly, edge.CapDrop)
	}
	ports := map[int]string{}
	for _, p := range edge.Ports {
		ports[p.Target] = p.Published
	}
	if ports[8080] != "80" || ports[8443] != "443" {
		t.Errorf("edge ports %+v", edge.Ports)
	}
	if len(chat.Ports) != 0 || strings.Join(chat.Command, " ") != "chat" {
		t.Errorf("chat: ports %+v, command %v", chat.Ports, chat.Command)
	}
	if chat.Env["DISINTO_SESSION_UID_BASE"] == nil || *chat.Env["DISINTO_SESSION_UID_BASE"] == "200000" {
		t.Errorf("the chat's sessions share the agents' uid pool")
	}
}

// buildEdgeImage builds the edge image from the checkout once per test
// binary.
func buildEdgeImage(t *testing.T, ctx context.Context) {
	t.Helper()
	requireEngine(t, "debian:bookworm-slim", "golang:1.26-bookworm")
	root := repoRoot(t)
	if out, err := run(ctx, root, baseEnv(), "docker", "build", "-q", "-f", "docker/edge/Dockerfile", "-t", edgeImage, "."); err != nil {
		t.Fatalf("build the edge image: %v\n%s", err, out)
	}
}

// TestEdgeImageChecksFirstAndFailsClosed runs the edge image on the
// engine: without its secret it refuses to start, naming it, before
// anything listens; with it, Caddy serves the generated file and, with no
// chat behind it, refuses /chat/ and /factory/ rather than letting them
// through.
func TestEdgeImageChecksFirstAndFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("engine test: skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	buildEdgeImage(t, ctx)
	name := fmt.Sprintf("edge-test-%d", os.Getpid())

	out, err := run(ctx, "", baseEnv(), "docker", "run", "--rm", "--name", name+"-nosecret", "--read-only", "--cap-drop", "ALL", edgeImage)
	if err == nil || !strings.Contains(out, "DISINTO_EDGE_SECRET") {
		t.Fatalf("without a secret: err %v, output:\n%s", err, out)
	}

	if out, err := run(ctx, "", baseEnv(), "docker", "run", "-d", "--name", name, "--read-only", "--cap-drop", "ALL",
		"-v", "/data", "-v", "/config", "-e", "DISINTO_EDGE_SECRET=edge-secret-0123456789", "-e", "DISINTO_STATUS_TOKEN=status-token-0123456789",
		"-p", "127.0.0.1::8080", edgeImage); err != nil {
		t.Fatalf("start the edge: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run(context.Background(), "", baseEnv(), "docker", "rm", "-f", "-v", name) })
	port, err := run(ctx, "", baseEnv(), "docker", "port", name, "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + strings.TrimSpace(strings.Split(strings.TrimSpace(port), "\n")[0])
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var status map[string]int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status = map[string]int{}
		for _, p := range []string{"/", "/chat/", "/factory/", "/chat/login"} {
			resp, err := client.Get(base + p)
			if err != nil {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			status[p] = resp.StatusCode
		}
		if len(status) == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // the container's caddy starting; no event to wait on
	}
	if len(status) != 4 {
		logs, _ := run(ctx, "", baseEnv(), "docker", "logs", name)
		t.Fatalf("the edge does not serve at %s: %v\n%s", base, status, logs)
	}
	for p, code := range status {
		// Nothing runs behind it: every upstream is unreachable, and the
		// checked routes must not fall through to anything.
		if code < 500 {
			t.Errorf("GET %s answered %d with no upstream, want a 5xx", p, code)
		}
	}
}
