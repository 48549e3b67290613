package edge_test

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/edge"
)

var update = flag.Bool("update", false, "rewrite the golden Caddyfiles")

// goldenCases are the configurations whose Caddyfiles are kept under
// testdata: the compose defaults on localhost, and a public name with
// certificates.
var goldenCases = []struct {
	name string
	cfg  edge.Config
}{
	{"localhost", edge.Config{}},
	{"public", edge.Config{Host: "factory.example.org", Email: "ops@example.org"}},
	{"container", edge.Config{Host: "factory.example.org", Port: 8080, TLSPort: 8443}},
	{"port", edge.Config{Port: 8088, Forge: "127.0.0.1:3000", Status: "127.0.0.1:8081", Chat: "127.0.0.1:8090", Admin: "off"}},
}

func TestCaddyfileGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := edge.Caddyfile(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.name+".Caddyfile")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./lib/edge -update)", err)
			}
			if got != string(want) {
				t.Errorf("Caddyfile of %s differs from %s:\n%s", tc.name, path, got)
			}
		})
	}
}

// TestCaddyValidates runs Debian's caddy on every golden configuration:
// what disinto writes is what Caddy accepts.
func TestCaddyValidates(t *testing.T) {
	bin := caddyBin(t)
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			text, err := edge.Caddyfile(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "Caddyfile")
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "validate", "--config", file, "--adapter", "caddyfile")
			cmd.Env = caddyEnv(t, "validate-secret-0123456789", "status-token-0123456789")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("caddy validate: %v\n%s", err, out)
			}
		})
	}
}

func TestRoutesOrderAndChecks(t *testing.T) {
	rs := edge.Config{}.Routes()
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "chat-login chat factory forge" {
		t.Fatalf("routes %s", got)
	}
	if rs[0].Check != "" {
		t.Error("the login must be reachable without a session")
	}
	if rs[1].Check != edge.DefaultChat || rs[2].Check != edge.DefaultChat {
		t.Error("the chat and the status page must pass the chat's check")
	}
	if strings.Join(rs[1].Paths, " ") != "/chat /chat/*" {
		t.Errorf("the chat route misses the bare /chat: %v", rs[1].Paths)
	}
	if len(rs[3].Paths) != 0 {
		t.Error("the forge route must catch everything else")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  edge.Config
		want string
	}{
		{edge.Config{Host: "bad host {"}, "host"},
		{edge.Config{Port: 70000}, "port"},
		{edge.Config{Port: 8443, TLSPort: 8443}, "TLS port"},
		{edge.Config{Forge: "forgejo"}, "forge upstream"},
		{edge.Config{Chat: "chat:x"}, "chat upstream"},
		{edge.Config{Status: "a b:1"}, "status upstream"},
		{edge.Config{Email: "not an email"}, "email"},
		{edge.Config{Admin: "nowhere"}, "admin address"},
	} {
		_, err := edge.Caddyfile(tc.cfg)
		if !errors.Is(err, edge.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestPublicURLAndTLS(t *testing.T) {
	for _, tc := range []struct {
		cfg edge.Config
		url string
		tls bool
	}{
		{edge.Config{}, "http://localhost", false},
		{edge.Config{Host: "localhost", Port: 8080}, "http://localhost:8080", false},
		{edge.Config{Host: "f.example.org"}, "https://f.example.org", true},
	} {
		if got := tc.cfg.PublicURL(); got != tc.url || tc.cfg.TLS() != tc.tls {
			t.Errorf("%+v: %s tls=%v, want %s tls=%v", tc.cfg, got, tc.cfg.TLS(), tc.url, tc.tls)
		}
	}
}
