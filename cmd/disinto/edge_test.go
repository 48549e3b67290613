package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEdgeCaddyfileCommand(t *testing.T) {
	code, out, _ := runCLI(t, nil, "edge", "caddyfile")
	if code != exitOK || !strings.Contains(out, "http://:80 {") || !strings.Contains(out, "forward_auth chat:8080") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, []string{"DISINTO_EDGE_HOST=factory.example.org", "DISINTO_EDGE_PORT=8080", "DISINTO_EDGE_TLS_PORT=8443"}, "edge", "caddyfile")
	if code != exitOK || !strings.Contains(out, "factory.example.org {") || !strings.Contains(out, "https_port 8443") {
		t.Fatalf("public name: exit %d:\n%s", code, out)
	}
	if code, _, errs := runCLI(t, []string{"DISINTO_EDGE_PORT=eighty"}, "edge", "caddyfile"); code != exitFailure || !strings.Contains(errs, "DISINTO_EDGE_PORT") {
		t.Errorf("bad port: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, []string{"DISINTO_EDGE_CHAT=chat"}, "edge", "caddyfile"); code != exitFailure || !strings.Contains(errs, "chat upstream") {
		t.Errorf("bad upstream: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, nil, "edge", "caddyfile", "--require-secrets"); code != exitFailure ||
		!strings.Contains(errs, "DISINTO_EDGE_SECRET") || !strings.Contains(errs, "DISINTO_STATUS_TOKEN") {
		t.Errorf("no secrets: exit %d %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "etc", "Caddyfile")
	env := []string{"DISINTO_EDGE_SECRET=0123456789abcdef0123", "DISINTO_STATUS_TOKEN=0123456789abcdef0123"}
	if code, _, errs := runCLI(t, env, "edge", "caddyfile", "--require-secrets", "--out", file); code != exitOK {
		t.Fatalf("--out: exit %d %s", code, errs)
	}
	if b, err := os.ReadFile(file); err != nil || strings.Contains(string(b), "0123456789abcdef0123") || !strings.Contains(string(b), "{$DISINTO_EDGE_SECRET}") {
		t.Errorf("written file: %v\n%s", err, b)
	}
	if code, _, _ := runCLI(t, nil, "edge", "caddyfile", "extra"); code != exitUsage {
		t.Errorf("extra argument: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runCLI(t, nil, "edge", "nope"); code != exitUsage {
		t.Errorf("unknown subcommand: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runCLI(t, nil, "chat", "extra"); code != exitUsage {
		t.Errorf("chat with an argument: exit %d, want %d", code, exitUsage)
	}
}
