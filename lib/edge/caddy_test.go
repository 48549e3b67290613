package edge_test

import (
	"os"
	"path/filepath"
	"testing"
)

// caddyBin is Debian's caddy, installed by tests/setup/caddy.sh
// (DISINTO_CADDY names another). A missing caddy fails the test.
func caddyBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("DISINTO_CADDY")
	if bin == "" {
		bin = "/usr/bin/caddy"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("caddy not installed (%v): run tests/setup/caddy.sh", err)
	}
	return bin
}

// caddyEnv is the environment of a test's caddy: its own home and data
// directories, and the two values the generated file reads.
func caddyEnv(t testing.TB, secret, statusToken string) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"DISINTO_EDGE_SECRET=" + secret,
		"DISINTO_STATUS_TOKEN=" + statusToken,
	}
}
