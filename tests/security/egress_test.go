package security

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/egress"
	"github.com/disinto/disinto/lib/egress/egresstest"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// egressWorld is the agents container and the rest of the stack, each a
// network namespace of its own, linked as compose links them. The stack
// holds the forge (10.89.0.2:3000 and [fd89::2]:3000), the chat
// (10.89.0.2:8080), the cloud metadata service (169.254.169.254:80), a
// UDP service (10.89.0.2:53, as a resolver would be) and two internet
// hosts (203.0.113.10, allowed, and 203.0.113.11, not). The container
// holds the daemon's listeners (webhooks on every address, status on
// loopback), another root service on loopback, the model gateway and the
// egress proxy, set up as the daemon sets them up.
type egressWorld struct {
	agents, stack *egresstest.NS
	// direct are what a session must not reach, by the body each
	// answers with.
	direct map[string]string
	udp    *net.UDPConn
	model  *claudetest.Server
	gw     *gateway.Gateway
	gwAddr netip.AddrPort
	proxy  *egress.Proxy
	pxAddr netip.AddrPort
	reg    *metrics.Registry
}

// serveText answers every request on ln with body.
func serveText(t *testing.T, ln net.Listener, body string) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func newEgressWorld(t *testing.T, scenario claudetest.Scenario) *egressWorld {
	t.Helper()
	w := &egressWorld{agents: egresstest.New(t), stack: egresstest.New(t), direct: map[string]string{}}
	w.agents.Veth("eth0", w.stack, "eth0")
	for ns, addrs := range map[*egresstest.NS][]string{
		w.agents: {"10.89.0.1/24", "fd89::1/64"},
		w.stack:  {"10.89.0.2/24", "fd89::2/64"},
	} {
		for _, a := range addrs {
			ns.AddAddr("eth0", netip.MustParsePrefix(a))
		}
	}
	for _, a := range []string{"169.254.169.254/32", "203.0.113.10/32", "203.0.113.11/32"} {
		w.stack.AddAddr("lo", netip.MustParsePrefix(a))
	}
	w.agents.DefaultRoute("eth0", netip.MustParseAddr("10.89.0.2"))

	for addr, body := range map[string]string{
		"10.89.0.2:3000": "FORGE-API-BODY", "[fd89::2]:3000": "FORGE-API-V6-BODY", "10.89.0.2:8080": "CHAT-BODY",
		"169.254.169.254:80": "METADATA-BODY", "203.0.113.10:80": "INTERNET-DIRECT-BODY",
	} {
		serveText(t, w.stack.Listen(addr), body)
		w.direct["http://"+addr+"/"] = body
	}
	allowed := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ALLOWED-HOST-BODY") }))
	allowed.Listener = w.stack.Listen("203.0.113.10:443")
	allowed.StartTLS()
	t.Cleanup(allowed.Close)
	serveText(t, w.stack.Listen("203.0.113.11:443"), "DENIED-HOST-BODY")
	w.stack.Do(func() {
		var err error
		if w.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(10, 89, 0, 2), Port: 53}); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = w.udp.Close() })

	hook := w.agents.Listen("0.0.0.0:0")
	serveText(t, hook, "WEBHOOK-BODY")
	w.direct[fmt.Sprintf("http://10.89.0.1:%d/", hook.Addr().(*net.TCPAddr).Port)] = "WEBHOOK-BODY"
	for _, body := range []string{"STATUS-BODY", "LOOPBACK-BODY"} {
		ln := w.agents.Listen("127.0.0.1:0")
		serveText(t, ln, body)
		w.direct["http://"+ln.Addr().String()+"/"] = body
	}

	// The model gateway, relaying to the scripted model server (which
	// stands outside both namespaces, as the model's API does).
	var modelURL string
	w.model, modelURL = claudetest.Start(t, scenario)
	var err error
	if w.gw, err = gateway.New(gateway.Options{Backends: []gateway.Backend{{Name: "scripted", URL: modelURL, APIKey: "sk-test-not-a-real-key"}}, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	gwln := w.agents.Listen("127.0.0.1:0")
	go func() { _ = http.Serve(gwln, w.gw) }()
	w.gwAddr = gwln.Addr().(*net.TCPAddr).AddrPort()

	// The egress proxy: the names resolve as DNS would, and it connects
	// from the container's namespace.
	w.reg = metrics.New(nil)
	names := map[string][]netip.Addr{
		"allowed.example": {netip.MustParseAddr("203.0.113.10")},
		"denied.example":  {netip.MustParseAddr("203.0.113.11")},
		"rebind.example":  {netip.MustParseAddr("169.254.169.254")},
	}
	if w.proxy, err = egress.NewProxy(egress.ProxyOptions{
		Allow:    map[string][]string{"proj": {"allowed.example", "rebind.example"}},
		Observer: w.reg, Log: zerolog.Nop(), Dial: w.agents.Dial,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return a, nil
			}
			return nil, errors.New("no such host")
		},
	}); err != nil {
		t.Fatal(err)
	}
	pxln := w.agents.Listen("127.0.0.1:0")
	w.proxy.Serve(pxln)
	t.Cleanup(func() { _ = w.proxy.Close() })
	w.pxAddr = pxln.Addr().(*net.TCPAddr).AddrPort()
	return w
}

// reachedUDP reports whether the stack's UDP service got a datagram.
func (w *egressWorld) reachedUDP() bool {
	_ = w.udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 64)
	_, _, err := w.udp.ReadFrom(buf)
	return err == nil
}

// probeScript is what a prompt-injected session would try with its Bash
// tool: every host and port of the stack directly (ignoring the proxy
// settings), a UDP datagram, and through the proxy an allowed host, a
// host not allowed, the forge and the metadata address by address, and
// an allowed name that resolves to the metadata address.
func (w *egressWorld) probeScript() string {
	var b strings.Builder
	b.WriteString(`p() { if out=$(curl --noproxy '*' -g -sS --connect-timeout 1 -m 2 "$1" 2>&1); then echo "REACHED $1 $out"; else echo "BLOCKED $1"; fi; }; `)
	for u := range w.direct {
		fmt.Fprintf(&b, "p '%s'; ", u)
	}
	b.WriteString(`echo q > /dev/udp/10.89.0.2/53; `)
	for _, u := range []string{"https://allowed.example/", "https://denied.example/", "http://10.89.0.2:3000/", "http://169.254.169.254/", "http://rebind.example/"} {
		fmt.Fprintf(&b, `echo "VIA-PROXY %s: $(curl -k -sS -m 10 %s 2>&1)"; `, u, u)
	}
	b.WriteString("echo PROBE-END")
	return b.String()
}

// TestSessionReachesOnlyGatewayAndProxy: a session of the real CLI,
// under its own uid in the agents container's namespace, talks to the
// model through the gateway and probes the network with its Bash tool.
// It reaches neither the forge (IPv4 or IPv6), the chat, the metadata
// address, the daemon's listeners, another loopback port, an internet
// host directly, nor any UDP service; through the proxy it reaches the
// allowed host and nothing else, and the refusals are counted.
func TestSessionReachesOnlyGatewayAndProxy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("sessions get uids of their own only as root (CI runs as root)")
	}
	t.Parallel()
	w := newEgressWorld(t, claudetest.Scenario{Name: "egress-probe"})
	script := w.probeScript()
	if err := w.model.SetScenarios(claudetest.Scenario{Name: "egress-probe",
		Turns: []claudetest.Turn{claudetest.Tools(claudetest.Bash(script)), claudetest.Text("Probed.")}}); err != nil {
		t.Fatal(err)
	}

	// Control: as root, without the rules, every target answers, so each
	// refusal below is the firewall's.
	root := &http.Client{Transport: &http.Transport{DialContext: w.agents.Dial}, Timeout: 5 * time.Second}
	for u, body := range w.direct {
		resp, err := root.Get(u)
		if err != nil {
			t.Fatalf("control %s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != body {
			t.Fatalf("control %s: %q", u, b)
		}
	}
	if err := w.agents.Try(func() error {
		c, err := net.Dial("udp", "10.89.0.2:53")
		if err == nil {
			_, err = c.Write([]byte("q"))
			c.Close()
		}
		return err
	}); err != nil || !w.reachedUDP() {
		t.Fatalf("control UDP: %v", err)
	}

	fw, err := egress.Install(egress.Options{Rules: egress.Rules{Table: egress.TableName("security"), Allow: []netip.AddrPort{w.gwAddr, w.pxAddr}},
		NetNS: w.agents.FD(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fw.Close() })
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions"), Isolate: true, UIDBase: 352000, UIDCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	sb.SetGuard(fw)
	ws, err := sb.Workspace("dev-proj-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws.Repo(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ws.Own(ws.Repo()); err != nil {
		t.Fatal(err)
	}
	e, err := claude.New(claude.Options{
		Bin:      claudetest.RequireCLI(t),
		Backends: []claude.Backend{{Name: "scripted", MaxSessions: 1}},
		BaseEnv:  claudetest.Env(t), IdleGrace: 30 * time.Second, Timeout: 3 * time.Minute, TranscriptDir: sandboxtest.Dir(t, "transcripts"),
		Gateway: w.gw, GatewayURL: "http://" + w.gwAddr.String(), EgressProxy: w.proxy.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	var res claude.Result
	// The session starts inside the container's namespace, as the
	// daemon's sessions do.
	if err := w.agents.Try(func() (err error) {
		ctx := claude.WithScope(testCtx(t), claude.Scope{Project: "proj", Role: "dev"})
		res, err = e.Run(ctx, claude.Invocation{Prompt: "scenario: egress-probe\nLook around the network.", Dir: ws.Repo(),
			Workspace: ws, MaxTurns: 4, Label: "dev-proj-issue-1"})
		return err
	}); err != nil || !res.Success() {
		t.Fatalf("the session did not reach the model through the gateway: %v %+v", err, res)
	}

	var out strings.Builder
	for _, r := range w.model.Requests() {
		out.WriteString(strings.Join(r.ToolResults, "\n"))
	}
	results := out.String()
	if !strings.Contains(results, "PROBE-END") {
		t.Fatalf("the probe did not run to its end:\n%s", results)
	}
	for u, body := range w.direct {
		if !strings.Contains(results, "BLOCKED "+u) || strings.Contains(results, body) {
			t.Errorf("the session reached %s directly", u)
		}
	}
	if w.reachedUDP() {
		t.Error("the session's UDP datagram reached the stack")
	}
	if !strings.Contains(results, "VIA-PROXY https://allowed.example/: ALLOWED-HOST-BODY") {
		t.Error("the session did not reach the allowed host through the proxy")
	}
	for _, leak := range []string{"DENIED-HOST-BODY", "METADATA-BODY", "FORGE-API-BODY"} {
		if strings.Contains(results, leak) {
			t.Errorf("%s reached the session through the proxy", leak)
		}
	}
	scrape := httptest.NewRecorder()
	w.reg.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`disinto_egress_requests_total{project="proj",result="allowed"} 1`,
		`disinto_egress_requests_total{project="proj",result="denied"} 3`,
		`disinto_egress_requests_total{project="proj",result="refused"} 1`,
	} {
		if !strings.Contains(scrape.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("tool results:\n%s", results)
	}
}
