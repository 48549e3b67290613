package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEdgeCaddyfileCommand(t *testing.T) {
	secrets := []string{"DISINTO_EDGE_SECRET=0123456789abcdef0123", "DISINTO_STATUS_TOKEN=0123456789abcdef0123"}
	code, out, errs := runCLI(t, secrets, "edge", "caddyfile")
	if code != exitOK || !strings.Contains(out, "http://:80 {") || !strings.Contains(out, "forward_auth chat:8080") || errs != "" {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	code, out, _ = runCLI(t, []string{"DISINTO_EDGE_HOST=factory.example.org", "DISINTO_EDGE_PORT=8080", "DISINTO_EDGE_TLS_PORT=8443"}, "edge", "caddyfile")
	if code != exitOK || !strings.Contains(out, "factory.example.org {") || !strings.Contains(out, "https_port 8443") {
		t.Fatalf("public name: exit %d:\n%s", code, out)
	}
	if code, _, errs := runCLI(t, []string{"DISINTO_EDGE_PORT=eighty"}, "edge", "caddyfile"); code != exitFailure || !strings.Contains(errs, "DISINTO_EDGE_PORT") {
		t.Errorf("bad port: exit %d %s", code, errs)
	}
	for _, tc := range []struct{ env, want string }{
		{"DISINTO_EDGE_CHAT=chat", `DISINTO_EDGE_CHAT="chat": want host:port`},
		{"DISINTO_EDGE_HOST=bad host", `DISINTO_EDGE_HOST="bad host": want a DNS name`},
		{"DISINTO_EDGE_FORGE=http://forgejo:3000", `DISINTO_EDGE_FORGE="http://forgejo:3000": want`},
		{"DISINTO_EDGE_PORT=70000", `DISINTO_EDGE_PORT=70000: want 1-65535`},
		{"DISINTO_EDGE_EMAIL=ops", `DISINTO_EDGE_EMAIL="ops": want an address`},
	} {
		if code, _, errs := runCLI(t, []string{tc.env}, "edge", "caddyfile"); code != exitFailure || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d %q, want one line with %q", tc.env, code, errs, tc.want)
		}
	}
	if code, _, errs := runCLI(t, nil, "edge", "caddyfile", "--require-secrets"); code != exitFailure ||
		!strings.Contains(errs, "DISINTO_EDGE_SECRET") || !strings.Contains(errs, "DISINTO_STATUS_TOKEN") {
		t.Errorf("no secrets: exit %d %s", code, errs)
	}
	// A bad setting is an error before any secret is looked at.
	if code, _, errs := runCLI(t, []string{"DISINTO_EDGE_HOST=bad host"}, "edge", "caddyfile", "--require-secrets"); code != exitFailure ||
		!strings.Contains(errs, "DISINTO_EDGE_HOST") || strings.Contains(errs, "DISINTO_EDGE_SECRET") {
		t.Errorf("bad host: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, []string{"DISINTO_EDGE_SECRET=short-secret"}, "edge", "caddyfile"); code != exitFailure ||
		!strings.Contains(errs, "DISINTO_EDGE_SECRET has 12 characters") || strings.Contains(errs, "short-secret") || strings.Count(errs, "\n") != 1 {
		t.Errorf("short secret: exit %d %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "etc", "Caddyfile")
	if code, _, errs := runCLI(t, secrets, "edge", "caddyfile", "--require-secrets", "--out", file); code != exitOK {
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

// TestEdgeCaddyfileWithoutSecrets: without the secret, or the status
// token, the file is still written, with the routes that need it
// disabled, and one warning line names what is missing.
func TestEdgeCaddyfileWithoutSecrets(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		warning  string
		disabled int
	}{
		{nil, "disinto: warning: DISINTO_EDGE_SECRET and DISINTO_STATUS_TOKEN are not set: the chat (/chat) and the status page (/factory) are disabled", 3},
		{[]string{"DISINTO_STATUS_TOKEN=0123456789abcdef0123"}, "disinto: warning: DISINTO_EDGE_SECRET is not set: the chat", 3},
		{[]string{"DISINTO_EDGE_SECRET=0123456789abcdef0123"}, "disinto: warning: DISINTO_STATUS_TOKEN is not set: the status page (/factory) is disabled", 1},
	} {
		file := filepath.Join(t.TempDir(), "Caddyfile")
		code, out, errs := runCLI(t, tc.env, "edge", "caddyfile", "--out", file)
		b, err := os.ReadFile(file)
		if code != exitOK || err != nil || out != "" {
			t.Fatalf("%v: exit %d %v %s", tc.env, code, err, errs)
		}
		if !strings.HasPrefix(errs, tc.warning) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line starting %q", tc.env, errs, tc.warning)
		}
		if n := strings.Count(string(b), " 503\n"); n != tc.disabled || !strings.Contains(string(b), "reverse_proxy forgejo:3000") {
			t.Errorf("%v: %d disabled routes, want %d, and the forge:\n%s", tc.env, n, tc.disabled, b)
		}
	}
}
