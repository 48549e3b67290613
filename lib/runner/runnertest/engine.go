package runnertest

import (
	"context"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Engine returns a client of the local Docker engine, closed when the test
// ends. Without root or an engine that answers, the test fails with
// SetupHint: a missing engine is never a skip.
func Engine(t testing.TB) *client.Client {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the engine tests need root (the Docker engine's socket): %s", SetupHint)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("no Docker engine answers at %s: %s\n%v", cli.DaemonHost(), SetupHint, err)
	}
	return cli
}

// BridgeGateway is the host's IPv4 address on the engine's default
// bridge, which containers on that bridge reach.
func BridgeGateway(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bridge, err := cli.NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{})
	if err != nil {
		t.Fatalf("inspect the bridge network: %v", err)
	}
	for _, c := range bridge.Network.IPAM.Config {
		if c.Gateway.Is4() {
			return c.Gateway.String()
		}
	}
	t.Fatalf("the bridge network has no IPv4 gateway: %+v", bridge.Network.IPAM)
	return ""
}

// ServeOnBridge serves h on the bridge's gateway, where containers reach
// the host, until the test ends, and returns its base URL.
func ServeOnBridge(t testing.TB, cli *client.Client, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(BridgeGateway(t, cli), "0"))
	if err != nil {
		t.Fatalf("listen on the bridge gateway: %v", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}
