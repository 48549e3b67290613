package runnertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
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
	addr, err := HostAddress(ctx, cli, "bridge")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// HostAddress is the host's IPv4 address on the named bridge network,
// where containers attached to it reach the host. It is the gateway the
// network's IPAM config names or, when the engine reports none (Debian's
// engine reports the default bridge's subnet without one right after a
// fresh start), the IPv4 address of the network's bridge interface on
// the host. The error names the network and what was tried.
func HostAddress(ctx context.Context, cli *client.Client, name string) (string, error) {
	res, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect the %s network: %w", name, err)
	}
	return hostAddress(res.Network, interfaceAddrs)
}

// bridgeNameOption is the driver option naming a bridge network's host
// interface; the engine sets it on the default bridge ("docker0").
const bridgeNameOption = "com.docker.network.bridge.name"

// hostAddress decides HostAddress from an inspected network, with addrs
// listing a host interface's addresses.
func hostAddress(n network.Inspect, addrs func(iface string) ([]netip.Prefix, error)) (string, error) {
	for _, c := range n.IPAM.Config {
		if c.Gateway.Is4() {
			return c.Gateway.String(), nil
		}
	}
	if n.Driver != "" && n.Driver != "bridge" {
		return "", fmt.Errorf("network %s: driver %q has no host bridge, and its IPAM config names no IPv4 gateway", n.Name, n.Driver)
	}
	iface := n.Options[bridgeNameOption]
	if iface == "" && len(n.ID) >= 12 {
		iface = "br-" + n.ID[:12] // the engine's name for a user-defined bridge
	}
	if iface == "" {
		return "", fmt.Errorf("network %s: its IPAM config names no IPv4 gateway and it names no bridge interface", n.Name)
	}
	prefixes, err := addrs(iface)
	if err != nil {
		return "", fmt.Errorf("network %s: its IPAM config names no IPv4 gateway, and its bridge interface %s: %w", n.Name, iface, err)
	}
	var subnets []netip.Prefix
	for _, c := range n.IPAM.Config {
		if c.Subnet.Addr().Is4() {
			subnets = append(subnets, c.Subnet.Masked())
		}
	}
	for _, p := range prefixes {
		a := p.Addr().Unmap()
		if !a.Is4() {
			continue
		}
		if len(subnets) == 0 {
			return a.String(), nil
		}
		for _, s := range subnets {
			if s.Contains(a) {
				return a.String(), nil
			}
		}
	}
	return "", fmt.Errorf("network %s: its IPAM config names no IPv4 gateway, and its bridge interface %s has no IPv4 address in %v (it has %v)", n.Name, iface, subnets, prefixes)
}

// interfaceAddrs lists the addresses of the host interface named iface.
func interfaceAddrs(iface string) ([]netip.Prefix, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if p, err := netip.ParsePrefix(ipn.String()); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
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
