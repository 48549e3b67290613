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
// testdata: the compose defaults on localhost, a public name with
// certificates, and the variants without the forward-auth secret, without
// the status token and without either (their routes disabled).
var goldenCases = []struct {
	name string
	cfg  edge.Config
}{
	{"localhost", edge.Config{}},
	{"public", edge.Config{Host: "factory.example.org", Email: "ops@example.org"}},
	{"container", edge.Config{Host: "factory.example.org", Port: 8080, TLSPort: 8443}},
	{"port", edge.Config{Port: 8088, Forge: "127.0.0.1:3000", Status: "127.0.0.1:8081", Chat: "127.0.0.1:8090", Admin: "off"}},
	{"nosecret", edge.Config{NoSecret: true}},
	{"nostatustoken", edge.Config{NoStatusToken: true}},
	{"nosecrets", edge.Config{Host: "factory.example.org", NoSecret: true, NoStatusToken: true}},
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
			secret, token := "validate-secret-0123456789", "status-token-0123456789"
			if tc.cfg.NoSecret {
				secret = ""
			}
			if tc.cfg.NoStatusToken {
				token = ""
			}
			cmd := exec.Command(bin, "validate", "--config", file, "--adapter", "caddyfile")
			cmd.Env = caddyEnv(t, secret, token)
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

// TestDisabledRoutes: without the secret the chat's routes and the status
// page are disabled, without the token the status page only; the forge is
// always served, and a disabled route names what to set and proxies to
// nothing.
func TestDisabledRoutes(t *testing.T) {
	for _, tc := range []struct {
		cfg      edge.Config
		disabled string // the route names
		warning  string
	}{
		{edge.Config{}, "", ""},
		{edge.Config{NoSecret: true}, "chat-login chat factory",
			"DISINTO_EDGE_SECRET is not set: the chat (/chat) and the status page (/factory) are disabled (answering 503); the forge (/) is served"},
		{edge.Config{NoStatusToken: true}, "factory",
			"DISINTO_STATUS_TOKEN is not set: the status page (/factory) is disabled (answering 503); the chat (/chat) and the forge (/) are served"},
		{edge.Config{NoSecret: true, NoStatusToken: true}, "chat-login chat factory",
			"DISINTO_EDGE_SECRET and DISINTO_STATUS_TOKEN are not set: the chat (/chat) and the status page (/factory) are disabled (answering 503); the forge (/) is served"},
	} {
		var off []string
		for _, r := range tc.cfg.Routes() {
			if r.Disabled == "" {
				if len(r.Missing) != 0 {
					t.Errorf("%+v: %s lacks %v but is not disabled", tc.cfg, r.Name, r.Missing)
				}
				continue
			}
			off = append(off, r.Name)
			if len(r.Missing) == 0 || !strings.Contains(r.Disabled, "not configured: set "+r.Missing[0]) {
				t.Errorf("%+v: %s disabled with %q, missing %v", tc.cfg, r.Name, r.Disabled, r.Missing)
			}
		}
		if got := strings.Join(off, " "); got != tc.disabled {
			t.Errorf("%+v: disabled %q, want %q", tc.cfg, got, tc.disabled)
		}
		if got := tc.cfg.Warning(); got != tc.warning {
			t.Errorf("%+v: warning\n%s\nwant\n%s", tc.cfg, got, tc.warning)
		}
		text, err := edge.Caddyfile(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if tc.cfg.NoSecret && strings.Contains(text, "{$"+edge.SecretEnv+"}") {
			t.Errorf("%+v: the file still reads the missing secret", tc.cfg)
		}
		if (tc.cfg.NoSecret || tc.cfg.NoStatusToken) && strings.Contains(text, "{$"+edge.StatusTokenEnv+"}") {
			t.Errorf("%+v: the file still sends the missing token", tc.cfg)
		}
		if tc.cfg.NoSecret && strings.Contains(text, "forward_auth") {
			t.Errorf("%+v: a disabled route still asks the chat", tc.cfg)
		}
	}
	if rs := (edge.Config{NoStatusToken: true}).Routes(); rs[2].Disabled != "the status page is not configured: set DISINTO_STATUS_TOKEN" {
		t.Errorf("the status page without its token: %q", rs[2].Disabled)
	}
	if rs := (edge.Config{NoSecret: true}).Routes(); rs[1].Disabled != "the chat is not configured: set DISINTO_EDGE_SECRET" {
		t.Errorf("the chat without the secret: %q", rs[1].Disabled)
	}
}

// TestWithSecrets: an unset variable disables its routes, a set one
// enables them, a short one is an error naming it and not its value.
func TestWithSecrets(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	long := "0123456789abcdef0123"
	c, err := edge.Config{}.WithSecrets(env(map[string]string{edge.StatusTokenEnv: long}))
	if err != nil || !c.NoSecret || c.NoStatusToken {
		t.Errorf("token only: %+v %v", c, err)
	}
	c, err = edge.Config{NoSecret: true}.WithSecrets(env(map[string]string{edge.SecretEnv: long, edge.StatusTokenEnv: long}))
	if err != nil || c.NoSecret || c.NoStatusToken {
		t.Errorf("both: %+v %v", c, err)
	}
	_, err = edge.Config{}.WithSecrets(env(map[string]string{edge.SecretEnv: "short-one"}))
	if !errors.Is(err, edge.ErrInvalid) || !strings.Contains(err.Error(), edge.SecretEnv) || strings.Contains(err.Error(), "short-one") {
		t.Errorf("a short secret: %v", err)
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
