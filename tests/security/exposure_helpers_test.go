package security

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// newInstall is disinto installed with one project whose forge is
// forgeURL, no env file, and the configuration in env, the environment of
// every command it runs.
func newInstall(t *testing.T, forgeURL string, env ...string) *rig.Install {
	t.Helper()
	// Session users must be able to pass to the data dir's workspaces.
	in := rig.New(t, sandboxtest.Dir(t, "rig"))
	in.EnvFile = filepath.Join(in.Dir, "none.env")
	rig.WriteProject(t, in.Projects, "widgets", "acme/widgets", forgeURL)
	home := filepath.Join(in.Dir, "home")
	in.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "POLL_INTERVAL=3600"}, env...)
	return in
}

// start starts `disinto daemon` of in with env and args; t's cleanup
// kills it, and shows its output when t failed.
func start(t *testing.T, in *rig.Install, env []string, args ...string) *rig.Daemon {
	t.Helper()
	d := in.Start(t, rig.DaemonOptions{Env: env, Grace: time.Second, Args: args})
	t.Cleanup(func() {
		if t.Failed() {
			d.Kill()
			t.Logf("daemon output:\n%s", d.Out.String())
		}
	})
	return d
}

// run runs one command to completion and returns its combined output.
func run(in *rig.Install, env []string, args ...string) (string, error) {
	out, errOut, err := in.Run(env, args...)
	return out + errOut, err
}

// get does a GET with an optional bearer token and returns status and body.
func get(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// otherAddress returns an address of this machine that is not loopback,
// or nil when it has none.
func otherAddress(t *testing.T) net.IP {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// port returns the port of a host:port address.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}
