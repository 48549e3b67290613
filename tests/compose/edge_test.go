package compose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

// edgeTestName is the prefix of the edge image these tests build from the
// checkout and of their containers: DISINTO_TEST_EDGE_NAME, so that two
// checkouts testing on one engine build and run apart, else "edge-test".
func edgeTestName() string {
	if v := os.Getenv("DISINTO_TEST_EDGE_NAME"); v != "" {
		return v
	}
	return "edge-test"
}

// edgeImage is the edge image these tests build from the checkout.
func edgeImage() string { return edgeTestName() + "/edge:test" }

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
	if out, err := run(ctx, root, baseEnv(), "docker", "build", "-q", "-f", "docker/edge/Dockerfile", "-t", edgeImage(), "."); err != nil {
		t.Fatalf("build the edge image: %v\n%s", err, out)
	}
}

// TestEdgeImageChecksFirstAndFailsClosed runs the edge image on the
// engine. A bad setting stops it before anything listens, naming the
// setting, and so does a missing secret when the operator asks for the
// strict start (--require-secrets). Without its secret it starts: the
// forge route proxies (here to no forge: a 5xx), and /chat/ and /factory/
// answer the disabled 503 naming the secret. With it, and with no chat
// behind it, /chat/ and /factory/ are refused rather than let through.
func TestEdgeImageChecksFirstAndFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("engine test: skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	buildEdgeImage(t, ctx)
	name := fmt.Sprintf("%s-%d", edgeTestName(), os.Getpid())

	out, err := run(ctx, "", baseEnv(), "docker", "run", "--rm", "--name", name+"-badhost", "--read-only", "--cap-drop", "ALL",
		"-e", "DISINTO_EDGE_HOST=bad host", edgeImage())
	if err == nil || strings.TrimSpace(out) != `disinto: DISINTO_EDGE_HOST="bad host": want a DNS name such as factory.example.org` {
		t.Fatalf("a bad host: err %v, output:\n%s", err, out)
	}
	out, err = run(ctx, "", baseEnv(), "docker", "run", "--rm", "--name", name+"-strict", "--read-only", "--cap-drop", "ALL",
		edgeImage(), "--require-secrets")
	if err == nil || !strings.Contains(out, "DISINTO_EDGE_SECRET must be set") {
		t.Fatalf("the strict start without a secret: err %v, output:\n%s", err, out)
	}

	nosecret := startEdge(ctx, t, name+"-nosecret", "-e", "DISINTO_STATUS_TOKEN=status-token-0123456789")
	got := edgeAnswers(ctx, t, nosecret)
	if code := got["/"].code; code < 500 || code == http.StatusServiceUnavailable && got["/"].disabled != "" {
		t.Errorf("GET / without a secret and no forge: %d %q, want the proxy's 5xx", code, got["/"].body)
	}
	for _, p := range []string{"/chat/", "/factory/", "/chat/login"} {
		a := got[p]
		if a.code != http.StatusServiceUnavailable || a.disabled != "DISINTO_EDGE_SECRET" || !strings.Contains(a.body, "not configured: set DISINTO_EDGE_SECRET") {
			t.Errorf("GET %s without a secret: %d %q (%q), want the disabled 503", p, a.code, a.body, a.disabled)
		}
	}
	if logs, _ := run(ctx, "", baseEnv(), "docker", "logs", name+"-nosecret"); strings.Count(logs, "disinto: warning: DISINTO_EDGE_SECRET is not set") != 1 {
		t.Errorf("the edge's start does not warn once about the secret:\n%s", logs)
	}

	with := startEdge(ctx, t, name, "-e", "DISINTO_EDGE_SECRET=edge-secret-0123456789", "-e", "DISINTO_STATUS_TOKEN=status-token-0123456789")
	for p, a := range edgeAnswers(ctx, t, with) {
		// Nothing runs behind it: every upstream is unreachable, and the
		// checked routes must not fall through to anything.
		if a.code < 500 || a.disabled != "" {
			t.Errorf("GET %s answered %d (%q) with no upstream, want the proxy's 5xx", p, a.code, a.disabled)
		}
	}
}

// startEdge runs the edge image as name with the extra docker run
// arguments until the test ends, and returns its base URL.
func startEdge(ctx context.Context, t *testing.T, name string, args ...string) string {
	t.Helper()
	runArgs := append([]string{"run", "-d", "--name", name, "--read-only", "--cap-drop", "ALL", "-v", "/data", "-v", "/config",
		"-p", "127.0.0.1::8080"}, args...)
	if out, err := run(ctx, "", baseEnv(), "docker", append(runArgs, edgeImage())...); err != nil {
		t.Fatalf("start the edge: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run(context.Background(), "", baseEnv(), "docker", "rm", "-f", "-v", name) })
	port, err := run(ctx, "", baseEnv(), "docker", "port", name, "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + strings.TrimSpace(strings.Split(strings.TrimSpace(port), "\n")[0])
}

// edgeAnswer is what the edge answered to one request.
type edgeAnswer struct {
	code     int
	body     string
	disabled string // the disabled header
}

// edgeAnswers asks the edge at base for its routes once it serves them.
func edgeAnswers(ctx context.Context, t *testing.T, base string) map[string]edgeAnswer {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	paths := []string{"/", "/chat/", "/factory/", "/chat/login"}
	var got map[string]edgeAnswer
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got = map[string]edgeAnswer{}
		for _, p := range paths {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+p, nil)
			resp, err := client.Do(req)
			if err != nil {
				break
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			got[p] = edgeAnswer{code: resp.StatusCode, body: string(b), disabled: resp.Header.Get("X-Disinto-Disabled")}
		}
		if len(got) == len(paths) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // the container's caddy starting; no event to wait on
	}
	if len(got) != len(paths) {
		t.Fatalf("the edge does not serve at %s: %v", base, got)
	}
	return got
}

var (
	csrfInputRe = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	hiddenRe    = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
)

// forgeForm posts a form of the forge page body to action, with the
// page's CSRF token and extra fields.
func forgeForm(ctx context.Context, t *testing.T, c *http.Client, action, body string, fields url.Values) (*http.Response, string) {
	t.Helper()
	if m := csrfInputRe.FindStringSubmatch(body); m != nil {
		fields.Set("_csrf", html.UnescapeString(m[1]))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action, strings.NewReader(fields.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", action, err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(b)
}

// edgeLogin logs user in to the chat through the edge, as a browser
// would: the chat's login, the forge's login form and its grant page,
// the callback. It returns a client holding the session.
func edgeLogin(ctx context.Context, t *testing.T, edgeURL, user, pass string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func(u string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(b)
	}
	resp, body := get(edgeURL + "/chat/login")
	if !strings.HasPrefix(resp.Request.URL.Path, "/user/login") {
		t.Fatalf("the chat's login led to %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	resp, body = forgeForm(ctx, t, c, resp.Request.URL.String(), body, url.Values{"user_name": {user}, "password": {pass}})
	if strings.Contains(body, `id="authorize-app"`) {
		fields := url.Values{"granted": {"true"}}
		for _, m := range hiddenRe.FindAllStringSubmatch(body, -1) {
			if m[1] != "_csrf" {
				fields.Set(m[1], html.UnescapeString(m[2]))
			}
		}
		resp, body = forgeForm(ctx, t, c, edgeURL+"/login/oauth/grant", body, fields)
	}
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/chat/" || !strings.Contains(body, `id="message"`) {
		t.Fatalf("not in the chat after the forge's login: %d at %s\n%s", resp.StatusCode, resp.Request.URL, tail(body, 20))
	}
	return c
}

// TestStackEdgeOnePort brings up the stack with the edge profile: on one
// port of the host the edge serves the forge at /, and, behind the forge
// login that provisioning set up (the chat's OAuth2 application), the
// chat at /chat/ and the daemon's status page at /factory/; without a
// session both refuse.
func TestStackEdgeOnePort(t *testing.T) {
	if testing.Short() {
		t.Skip("compose stack test: skipped under -short")
	}
	requireEngine(t, testForgeImage, "debian:bookworm-slim", "golang:1.26-bookworm")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	port, tlsPort := freePort(t), freePort(t)
	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	vars := stackVars(t)
	for k, v := range map[string]string{
		"DISINTO_EDGE_URL": edgeURL, "DISINTO_EDGE_BIND": "127.0.0.1", "DISINTO_EDGE_HTTP_PORT": strconv.Itoa(port),
		"DISINTO_EDGE_HTTPS_PORT": strconv.Itoa(tlsPort), "DISINTO_EDGE_SECRET": "stack-edge-secret-0123456789",
		"DISINTO_EDGE_IMAGE": edgeImage(), "FORGEJO_ROOT_URL": edgeURL + "/",
	} {
		vars[k] = v
	}
	s := newStack(t, vars)
	buildModelServer(ctx, t, vars["DISINTO_TEST_MODELSERVER_DIR"], claudetest.Scenario{Name: "idle", Default: true,
		Turns: []claudetest.Turn{claudetest.Text("nothing to do")}})
	s.must(ctx, "build", "provision")
	s.must(ctx, "--profile", "edge", "build", "edge")
	s.must(ctx, "--profile", "edge", "up", "--detach", "edge", "agents")
	s.waitExited(ctx, "provision")
	s.waitHealthy(ctx, "chat")
	s.waitHealthy(ctx, "edge")
	s.waitHealthy(ctx, "agents")

	plain := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(c *http.Client, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, edgeURL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := status(plain, "/api/v1/version"); code != http.StatusOK || !strings.Contains(body, "version") {
		t.Errorf("the forge through the edge: %d %s", code, body)
	}
	for _, p := range []string{"/chat/", "/factory/"} {
		if code, _ := status(plain, p); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", p, code)
		}
	}
	c := edgeLogin(ctx, t, edgeURL, "disinto-admin", vars["FORGE_ADMIN_PASS"])
	if code, body := status(c, "/factory/"); code != http.StatusOK || !strings.Contains(body, "In flight") {
		t.Errorf("the status page through the edge: %d\n%s", code, tail(body, 10))
	}
	doctor, _ := s.compose(ctx, "exec", "-T", "agents", "disinto", "doctor")
	for _, want := range []string{"oauth2-app disinto-chat: credentials present", "edge chat http://edge:8080/chat/: answers 401",
		"edge chat-login http://edge:8080/chat/login: sends browsers to the forge's login"} {
		if !strings.Contains(doctor, want) {
			t.Errorf("the doctor lacks %q:\n%s", want, doctor)
		}
	}
}

// freePort is a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
