package runnertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestHostAddressDecision(t *testing.T) {
	subnet := []network.IPAMConfig{{Subnet: netip.MustParsePrefix("172.17.0.0/16")}}
	withGateway := []network.IPAMConfig{{Subnet: netip.MustParsePrefix("172.17.0.0/16"), Gateway: netip.MustParseAddr("172.17.0.1")}}
	docker0 := map[string]string{bridgeNameOption: "docker0"}
	cases := []struct {
		name    string
		n       network.Inspect
		ifaces  map[string][]netip.Prefix
		want    string
		wantErr string
	}{{
		name: "the IPAM gateway wins",
		n:    inspect("bridge", "bridge", "", docker0, withGateway),
		want: "172.17.0.1",
	}, {
		name:   "no gateway: the default bridge's interface",
		n:      inspect("bridge", "bridge", "", docker0, subnet),
		ifaces: map[string][]netip.Prefix{"docker0": prefixes(t, "fe80::1/64", "172.17.0.1/16")},
		want:   "172.17.0.1",
	}, {
		name:   "no gateway: a user-defined bridge is br-<id>",
		n:      inspect("ci", "bridge", "0123456789abcdef", nil, []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.99.0.0/24")}}),
		ifaces: map[string][]netip.Prefix{"br-0123456789ab": prefixes(t, "10.99.0.1/24")},
		want:   "10.99.0.1",
	}, {
		name:    "no gateway: an address outside the subnet is not the host's on it",
		n:       inspect("bridge", "bridge", "", docker0, subnet),
		ifaces:  map[string][]netip.Prefix{"docker0": prefixes(t, "192.0.2.1/24")},
		wantErr: "bridge interface docker0 has no IPv4 address in [172.17.0.0/16]",
	}, {
		name:    "no gateway and no interface",
		n:       inspect("bridge", "bridge", "", docker0, subnet),
		wantErr: "network bridge: its IPAM config names no IPv4 gateway, and its bridge interface docker0: no such interface",
	}, {
		name:    "not a bridge",
		n:       inspect("host", "host", "", nil, nil),
		wantErr: `network host: driver "host" has no host bridge`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := hostAddress(c.n, func(iface string) ([]netip.Prefix, error) {
				p, ok := c.ifaces[iface]
				if !ok {
					return nil, errors.New("no such interface")
				}
				return p, nil
			})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("hostAddress = %q, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("hostAddress = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func inspect(name, driver, id string, opts map[string]string, cfg []network.IPAMConfig) network.Inspect {
	var n network.Inspect
	n.Name, n.Driver, n.ID, n.Options = name, driver, id, opts
	n.IPAM.Config = cfg
	return n
}

// TestContainerReachesHostWithoutGateway runs the helpers against real
// bridge networks whose IPAM config names no gateway (the default bridge
// and one the test creates, with the gateway taken out of the inspected
// config, as a freshly started Debian engine reports it) and proves a
// container on each reaches a server on the address they give.
func TestContainerReachesHostWithoutGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("engine test: skipped under -short")
	}
	cli := Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	name := "disinto-test-nogw-" + randomHex(t)
	created, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: map[string]string{"org.disinto.test-standin": "true"},
	})
	if err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := cli.NetworkRemove(ctx, created.ID, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("remove network %s: %v", name, err)
		}
	})

	for _, nw := range []string{"bridge", name} {
		t.Run(nw, func(t *testing.T) {
			res, err := cli.NetworkInspect(ctx, nw, client.NetworkInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := res.Network
			cfg := append([]network.IPAMConfig(nil), n.IPAM.Config...)
			for i := range cfg {
				cfg[i].Gateway = netip.Addr{}
			}
			n.IPAM.Config = cfg
			addr, err := hostAddress(n, interfaceAddrs)
			if err != nil {
				t.Fatalf("host address on %s without its gateway: %v", nw, err)
			}
			withGateway, err := HostAddress(ctx, cli, nw)
			if err != nil {
				t.Fatalf("HostAddress(%s): %v", nw, err)
			}
			if withGateway != addr {
				t.Errorf("host address on %s: %s from the interface, %s as the engine reports it", nw, addr, withGateway)
			}
			reach(ctx, t, cli, nw, addr)
		})
	}
}

// reach serves a token on addr and has a container on nw fetch it.
func reach(ctx context.Context, t *testing.T, cli *client.Client, nw, addr string) {
	t.Helper()
	token := randomHex(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, token)
	})}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	// bash's /dev/tcp: the Debian base image has no HTTP client.
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3`, addr, port)
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: "debian:bookworm-slim", Cmd: []string{"bash", "-c", script}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(nw)},
	})
	if err != nil {
		t.Fatalf("create a container on %s: %v (%s)", nw, err, SetupHint)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start the container on %s: %v", nw, err)
	}
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var code int64
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case err := <-wait.Error:
		t.Fatalf("wait for the container on %s: %v", nw, err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatalf("logs: %v", err)
	}
	if code != 0 || !strings.Contains(out.String(), token) {
		t.Fatalf("a container on %s did not reach %s:%s (exit %d):\n%s", nw, addr, port, code, out.String())
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
