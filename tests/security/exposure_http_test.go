package security

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/tests/internal/rig"
)

const hookSecret = "hook-secret-0123456789"

// TestExposureHTTP attacks the daemon's HTTP server as `disinto daemon`
// runs it: a client that holds a connection open by trickling a webhook
// body, and a host on the network reading /status and /metrics.
func TestExposureHTTP(t *testing.T) {
	// The only role is the planner, whose first run is its 12 h interval
	// away: the daemon only serves.
	in := newInstall(t, "http://127.0.0.1:1", "DISINTO_WEBHOOK_SECRET="+hookSecret, "AGENT_ROLES=planner",
		"FORGE_TOKEN=dev-token-0123456789", "FORGE_USER=dev-bot", "FORGE_PASS=dev-pass-0123456789")

	t.Run("webhook body trickled at 1 byte/s is cut off", func(t *testing.T) {
		p := start(t, in, []string{"DISINTO_HTTP_READ_TIMEOUT=2s", "DISINTO_STATUS_LISTEN=127.0.0.1:0"}, "--listen", "127.0.0.1:0")
		a := p.AwaitAddrs(t)
		conn, err := net.Dial("tcp", a.Listen)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		const size = 600
		head := "POST /hooks/forgejo HTTP/1.1\r\nHost: agents\r\nContent-Type: application/json\r\n" +
			"X-Forgejo-Event-Type: issues\r\nX-Forgejo-Signature: 00\r\nContent-Length: 600\r\n\r\n"
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		stop, sent := make(chan struct{}), make(chan int, 1)
		go func() {
			n := 0
			defer func() { sent <- n }()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for n < size {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte{' '}); err != nil {
					return
				}
				n++
			}
		}()
		// The whole body takes ten minutes to arrive; a server with a
		// read timeout answers or hangs up long before.
		const patience = 30 * time.Second
		_ = conn.SetReadDeadline(time.Now().Add(patience))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		close(stop)
		n := <-sent
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("after %s the server is still reading a body trickled at 1 byte/s (%d of %d bytes sent)", patience, n, size)
		case err != nil:
			// The server closed the connection: cut off.
		case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusUnauthorized:
			t.Fatalf("the server read the whole trickled body: HTTP %d", resp.StatusCode)
		default:
			_ = resp.Body.Close()
		}
		if n >= size {
			t.Fatalf("the whole body was sent before the server gave up")
		}
		_ = p.Stop(t, 30*time.Second)
	})

	t.Run("/status and /metrics are not served to other hosts", func(t *testing.T) {
		// As in compose: the webhook listener is on every interface.
		p := start(t, in, []string{"DISINTO_STATUS_LISTEN=127.0.0.1:0"}, "--listen", ":0")
		a := p.AwaitAddrs(t)
		other := otherAddress(t)
		if other != nil {
			for _, path := range []string{"/metrics", "/status", "/"} {
				url := "http://" + net.JoinHostPort(other.String(), port(t, a.Listen)) + path
				if code, body, err := get(url, ""); err == nil && code == http.StatusOK {
					t.Errorf("GET %s from %s: HTTP 200\n%.300s", path, other, body)
				}
			}
		} else {
			t.Log("this machine has no address but loopback; checking the status listener's address only")
		}
		host, _, err := net.SplitHostPort(a.StatusAddr())
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Fatalf("/status and /metrics are served on %s, not on loopback", a.StatusAddr())
		}
		if other != nil {
			url := "http://" + net.JoinHostPort(other.String(), port(t, a.StatusAddr())) + "/metrics"
			if code, _, err := get(url, ""); err == nil {
				t.Errorf("GET /metrics from %s on the status port: HTTP %d", other, code)
			}
		}
		if code, body, err := get("http://"+a.StatusAddr()+"/metrics", ""); err != nil || code != http.StatusOK || !strings.Contains(body, "disinto_") {
			t.Errorf("GET /metrics on loopback: %d %v", code, err)
		}
		if out, err := run(in, nil, "status"); err != nil || !strings.Contains(out, "daemon: running") {
			t.Errorf("disinto status does not reach the daemon: %v\n%s", err, out)
		}
		_ = p.Stop(t, 30*time.Second)
	})

	t.Run("status off loopback needs a token", func(t *testing.T) {
		p := start(t, in, []string{"DISINTO_STATUS_LISTEN=0.0.0.0:0"}, "--listen", "127.0.0.1:0")
		rig.Await(t, "the daemon to refuse an unprotected status listener", 30*time.Second, nil, p.Exited)
		out := strings.TrimSpace(p.Out.String())
		if p.Err() == nil || strings.Contains(out, "\n") || !strings.Contains(out, "DISINTO_STATUS_TOKEN") {
			t.Fatalf("daemon exit %v, want one line naming DISINTO_STATUS_TOKEN:\n%s", p.Err(), out)
		}
		if _, err := os.Stat(in.Data + "/daemon.json"); err == nil {
			t.Error("daemon.json written by a daemon that refused to start")
		}

		const token = "status-token-0123456789abcdef"
		env := []string{"DISINTO_STATUS_TOKEN=" + token}
		p = start(t, in, append(env, "DISINTO_STATUS_LISTEN=0.0.0.0:0"), "--listen", "127.0.0.1:0")
		a := p.AwaitAddrs(t)
		host := "127.0.0.1"
		if other := otherAddress(t); other != nil {
			host = other.String()
		}
		base := "http://" + net.JoinHostPort(host, port(t, a.StatusAddr()))
		for _, tok := range []string{"", "wrong-token-0123456789abcdef", token[:len(token)-1]} {
			for _, path := range []string{"/metrics", "/status"} {
				if code, _, err := get(base+path, tok); err != nil || code != http.StatusUnauthorized {
					t.Errorf("GET %s with token %q: %d %v, want 401", path, tok, code, err)
				}
			}
		}
		if code, _, err := get(base+"/metrics", token); err != nil || code != http.StatusOK {
			t.Errorf("GET /metrics with the token: %d %v", code, err)
		}
		if out, err := run(in, env, "status"); err != nil || !strings.Contains(out, "daemon: running") {
			t.Errorf("disinto status with the token does not reach the daemon: %v\n%s", err, out)
		}
		_ = p.Stop(t, 30*time.Second)
	})
}
