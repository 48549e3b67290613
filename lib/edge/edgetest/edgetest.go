// Package edgetest runs the real edge for a test: Debian's caddy
// (tests/setup/caddy.sh) with the Caddyfile lib/edge generates, on a free
// loopback port. Imported from tests only.
package edgetest

import (
	"bytes"
	"context"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/edge"
)

// Bin is Debian's caddy, or $DISINTO_CADDY. A missing caddy fails the
// test: it is a prerequisite, never a reason to skip.
func Bin(t testing.TB) string {
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

// Env is the environment of a test's caddy: its own home and state
// directories, and the secret and the status token the file reads.
func Env(t testing.TB, secret, statusToken string) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		edge.SecretEnv + "=" + secret, edge.StatusTokenEnv + "=" + statusToken,
	}
}

// FreePort returns a loopback port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start runs caddy with the Caddyfile of c (Port must be set, Admin
// should be "off") until the test ends, and returns its base URL once it
// accepts connections. As at the edge's start, an empty secret or status
// token disables the routes that need it.
func Start(t testing.TB, c edge.Config, secret, statusToken string) string {
	t.Helper()
	env := map[string]string{edge.SecretEnv: secret, edge.StatusTokenEnv: statusToken}
	c, err := c.WithSecrets(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	text, err := edge.Caddyfile(c)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, Bin(t), "run", "--config", file, "--adapter", "caddyfile")
	cmd.Env = Env(t, secret, statusToken)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start caddy: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("caddy output:\n%s", out.String())
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(c.Port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return "http://" + addr
		}
		select {
		case err := <-done:
			t.Fatalf("caddy exited: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy does not listen on %s:\n%s", addr, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the process's two streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
