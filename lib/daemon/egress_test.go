package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/egress/egresstest"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// egressConfig is a project whose sessions may reach one host.
func egressConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse(map[string][]byte{"p.toml": []byte("name = \"p\"\nrepo = \"o/p\"\n[egress]\nallow = [\"proxy.golang.org\"]\n")}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func isolatedSandbox(t *testing.T, base int) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Root: sandboxtest.Dir(t, "sessions"), Isolate: true, UIDBase: base, UIDCount: 2, ClaimDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func nftConn(t *testing.T, ns *egresstest.NS) *nftables.Conn {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(ns.FD()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStartEgress: with isolated sessions the daemon installs its table
// (named for its instance), admits each workspace's uid to it, points
// sessions at its proxy, and removes the table again on close.
func TestStartEgress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolated sessions need root")
	}
	ns := egresstest.New(t)
	sb := isolatedSandbox(t, 341000)
	var e *sessionEgress
	if err := ns.Try(func() (err error) {
		e, err = startEgress(egressConfig(t), sb, "http://127.0.0.1:4000", "0123abcd", false, nil, logx.Nop())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if e.egressMode() != EgressFiltered || e.sessionsGateway("http://127.0.0.1:4000") != "http://127.0.0.1:4000" {
		t.Errorf("mode %q, sessions' gateway %q", e.egressMode(), e.sessionsGateway("http://127.0.0.1:4000"))
	}
	if u := e.proxyURL()("p"); !strings.HasPrefix(u, "http://p:") || !strings.Contains(u, "@127.0.0.1:") {
		t.Errorf("proxy URL of p's sessions: %q", u)
	}
	c := nftConn(t, ns)
	tb, err := c.ListTableOfFamily("disinto_0123abcd", nftables.TableFamilyINet)
	if err != nil {
		t.Fatalf("the instance's table: %v", err)
	}
	ws, err := sb.Workspace("dev-p-issue-1")
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.GetSetByName(tb, "sessions")
	if err != nil {
		t.Fatal(err)
	}
	elems, err := c.GetSetElements(set)
	if err != nil || len(elems) != 1 || int(binaryutil.NativeEndian.Uint32(elems[0].Key)) != ws.UID() {
		t.Errorf("admitted %v (%v), want uid %d", elems, err, ws.UID())
	}
	if err := e.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTableOfFamily("disinto_0123abcd", nftables.TableFamilyINet); err == nil {
		t.Error("the table outlived the daemon's close")
	}
}

// TestStartEgressRemoteGateway: with another container's gateway,
// sessions get a relay on loopback (the only place the firewall lets
// them reach it), and it reaches that gateway.
func TestStartEgressRemoteGateway(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolated sessions need root")
	}
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "gateway saw "+r.URL.Path+" "+r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(remote.Close)
	gwURL := strings.Replace(remote.URL, "127.0.0.1", "localhost", 1)
	ns := egresstest.New(t)
	var e *sessionEgress
	if err := ns.Try(func() (err error) {
		e, err = startEgress(egressConfig(t), isolatedSandbox(t, 342000), gwURL, "remote", false, nil, logx.Nop())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.close() })
	relay := e.sessionsGateway(gwURL)
	if relay == gwURL || !strings.HasPrefix(relay, "http://127.0.0.1:") {
		t.Fatalf("sessions' gateway %q", relay)
	}
	req, _ := http.NewRequest(http.MethodPost, relay+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("X-Api-Key", "run-key")
	resp, err := (&http.Client{Transport: &http.Transport{DialContext: ns.Dial}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if body := string(b); body != "gateway saw /v1/messages run-key" {
		t.Errorf("through the relay: %q", body)
	}
}

// TestStartEgressFailsClosed: where the rules cannot be installed (no
// NET_ADMIN), sessions do not start, with one line saying why, unless
// the operator accepts unfiltered sessions, which the mode then says.
func TestStartEgressFailsClosed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolated sessions need root")
	}
	ns := egresstest.New(t)
	var err error
	if terr := ns.WithoutNetAdmin(func() error {
		_, err = startEgress(egressConfig(t), isolatedSandbox(t, 343000), "http://127.0.0.1:4000", "denied", false, nil, logx.Nop())
		return nil
	}); terr != nil {
		t.Fatal(terr)
	}
	if err == nil {
		t.Fatal("sessions would start without the firewall")
	}
	msg := err.Error()
	for _, want := range []string{"cannot be kept off the network", "NET_ADMIN", "--allow-unisolated-sessions"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line with %q", msg, want)
		}
	}
	var e *sessionEgress
	if terr := ns.WithoutNetAdmin(func() (err error) {
		e, err = startEgress(egressConfig(t), isolatedSandbox(t, 344000), "http://127.0.0.1:4000", "accepted", true, nil, logx.Nop())
		return err
	}); terr != nil {
		t.Fatalf("with --allow-unisolated-sessions: %v", terr)
	}
	t.Cleanup(func() { _ = e.close() })
	if e.egressMode() != EgressUnfiltered || e.proxyURL() == nil {
		t.Errorf("accepted: mode %q, proxy %v", e.egressMode(), e.proxyURL() != nil)
	}
	if ts, err := nftConn(t, ns).ListTables(); err != nil || len(ts) != 0 {
		t.Errorf("tables %v, %v", ts, err)
	}
	if !strings.Contains(textOf(Report{Daemon: &Info{}, Sessions: SessionsIsolated, Egress: e.egressMode()}), "network: UNFILTERED") {
		t.Error("status does not say the network is unfiltered")
	}
}

// TestEgressUnisolated: sessions that run as the daemon's user get
// nothing of it: no rule could tell them from the daemon.
func TestEgressUnisolated(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := startEgress(egressConfig(t), sb, "http://127.0.0.1:4000", "x", true, nil, logx.Nop())
	if err != nil || e != nil || e.proxyURL() != nil || e.sessionsGateway("g") != "g" || e.egressMode() != "" {
		t.Errorf("unisolated: %v, %v", e, err)
	}
}

func textOf(rep Report) string {
	var b strings.Builder
	rep.WriteText(&b, true)
	return b.String()
}
