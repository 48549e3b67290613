package compose_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testStatusToken is the stacks' DISINTO_STATUS_TOKEN.
const testStatusToken = "stack-status-token-0123456789"

// TestProductConfigDoctorAndStatus: the agents publish the status
// listener on the host's loopback only, listen for it on the container's
// interface with the token .env must set, pass the OAuth token through,
// read the project files from the host, and every service that can drops
// its capabilities and new privileges (the agents keep NET_ADMIN, for the
// sessions' firewall in their own network namespace).
func TestProductConfigDoctorAndStatus(t *testing.T) {
	requireCompose(t)
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	example, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(envFile, append(example, []byte("\nCLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-compose\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := productConfig(ctx, root, envFile, "config", "--format", "json")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, out)
	}
	type port struct {
		HostIP    string `json:"host_ip"`
		Target    int    `json:"target"`
		Published string `json:"published"`
	}
	type volume struct {
		Type   string `json:"type"`
		Source string `json:"source"`
		Target string `json:"target"`
	}
	var cfg struct {
		Services map[string]struct {
			Ports       []port            `json:"ports"`
			Environment map[string]string `json:"environment"`
			Volumes     []volume          `json:"volumes"`
			CapDrop     []string          `json:"cap_drop"`
			CapAdd      []string          `json:"cap_add"`
			SecurityOpt []string          `json:"security_opt"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("config JSON: %v\n%s", err, out)
	}
	agents := cfg.Services["agents"]
	if len(agents.Ports) != 1 || agents.Ports[0] != (port{HostIP: "127.0.0.1", Target: 8081, Published: "8080"}) {
		t.Errorf("agents publish %+v, want 127.0.0.1:8080 -> 8081 only", agents.Ports)
	}
	for k, want := range map[string]string{
		"DISINTO_STATUS_LISTEN":   ":8081",
		"DISINTO_STATUS_TOKEN":    "change-me-to-a-random-token",
		"DISINTO_WEBHOOK_URL":     "http://agents:8080/hooks/forgejo",
		"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-compose",
	} {
		if got := agents.Environment[k]; got != want {
			t.Errorf("agents %s = %q, want %q", k, got, want)
		}
	}
	for _, name := range []string{"provision", "agents"} {
		found := false
		for _, v := range cfg.Services[name].Volumes {
			found = found || v.Type == "bind" && v.Source == filepath.Join(root, "projects") && v.Target == "/home/agent/data/projects"
		}
		if !found {
			t.Errorf("%s does not mount ./projects on /home/agent/data/projects: %+v", name, cfg.Services[name].Volumes)
		}
	}
	for name, caps := range map[string]string{"forgejo-admin": "", "provision": "DAC_OVERRIDE", "agents": "CHOWN,DAC_OVERRIDE,FOWNER,KILL,NET_ADMIN,SETGID,SETUID"} {
		svc := cfg.Services[name]
		if strings.Join(svc.CapDrop, ",") != "ALL" || strings.Join(svc.SecurityOpt, ",") != "no-new-privileges:true" {
			t.Errorf("%s: cap_drop %v, security_opt %v; want ALL and no-new-privileges", name, svc.CapDrop, svc.SecurityOpt)
		}
		if got := strings.Join(svc.CapAdd, ","); got != caps {
			t.Errorf("%s: cap_add %s, want %s", name, got, caps)
		}
	}
}

// checkDoctorAndStatusPage checks a running stack: the agents' logs open
// with the doctor's findings and nothing blocked, and the status page is
// served on the published port to the token only.
func checkDoctorAndStatusPage(ctx context.Context, t *testing.T, s *stack, logs string) {
	t.Helper()
	for _, want := range []string{"OK       config", "OK       session-isolation", "OK       token FORGE_TOKEN: authenticates as dev-bot", "0 blocking"} {
		if !strings.Contains(logs, want) {
			t.Errorf("agents logs lack the doctor's %q:\n%s", want, tail(logs, 40))
		}
	}
	addr := strings.TrimSpace(s.must(ctx, "port", "agents", "8081"))
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("status port published on %q, want the host's loopback", addr)
	}
	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("status page: %v", err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("status page without the token: HTTP %d, want 401", code)
	}
	if code, body := get(testStatusToken); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("status page with the token: HTTP %d\n%s", code, tail(body, 10))
	}
}
