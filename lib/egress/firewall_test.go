//go:build linux

package egress_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/egress"
	"github.com/disinto/disinto/lib/egress/egresstest"
)

// sessionUID is the uid the tests admit; otherUID is a session uid of
// the same range that is not admitted (another daemon's).
const (
	sessionUID = 390001
	otherUID   = 390002
)

// world is the agents container's namespace (ns) linked to a namespace
// standing for the rest of the stack and the internet (stack): the forge
// at 10.89.0.2:3000 and [fd89::2]:3000, the metadata service at
// 169.254.169.254:80 and a UDP service at 10.89.0.2:53. In ns: the
// gateway's and the proxy's ports, another root service on loopback, a
// root service on every address (the webhook receiver), and a server of
// the session's own uid.
type world struct {
	ns, stack                   *egresstest.NS
	gateway, proxy, other, hook netip.AddrPort
	own                         netip.AddrPort
	forge, forge6, metadata     netip.AddrPort
	udp                         *net.UDPConn
}

func newWorld(t *testing.T) *world {
	w := &world{ns: egresstest.New(t), stack: egresstest.New(t)}
	w.ns.Veth("eth0", w.stack, "eth0")
	w.ns.AddAddr("eth0", netip.MustParsePrefix("10.89.0.1/24"))
	w.stack.AddAddr("eth0", netip.MustParsePrefix("10.89.0.2/24"))
	w.ns.AddAddr("eth0", netip.MustParsePrefix("fd89::1/64"))
	w.stack.AddAddr("eth0", netip.MustParsePrefix("fd89::2/64"))
	w.stack.AddAddr("lo", netip.MustParsePrefix("169.254.169.254/32"))
	w.ns.DefaultRoute("eth0", netip.MustParseAddr("10.89.0.2"))

	serve := func(ln net.Listener) netip.AddrPort {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.WriteString(c, "hello\n"); _ = c.Close() }()
			}
		}()
		return ln.Addr().(*net.TCPAddr).AddrPort()
	}
	w.gateway = serve(w.ns.Listen("127.0.0.1:0"))
	w.proxy = serve(w.ns.Listen("127.0.0.1:0"))
	w.other = serve(w.ns.Listen("127.0.0.1:0"))
	hook := serve(w.ns.Listen("0.0.0.0:0"))
	w.hook = netip.AddrPortFrom(netip.MustParseAddr("10.89.0.1"), hook.Port())
	w.forge = netip.AddrPortFrom(netip.MustParseAddr("10.89.0.2"), serve(w.stack.Listen("10.89.0.2:3000")).Port())
	w.forge6 = netip.AddrPortFrom(netip.MustParseAddr("fd89::2"), serve(w.stack.Listen("[fd89::2]:3000")).Port())
	w.metadata = serve(w.stack.Listen("169.254.169.254:80"))
	w.stack.Do(func() {
		var err error
		if w.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(10, 89, 0, 2), Port: 53}); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = w.udp.Close() })
	// The session's own server accepts as the session's uid too, as a
	// process of that uid would: the accepted socket is its.
	owned := make(chan netip.AddrPort, 1)
	go func() {
		_ = w.ns.As(sessionUID, func() error {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				close(owned)
				return err
			}
			t.Cleanup(func() { _ = ln.Close() })
			owned <- ln.Addr().(*net.TCPAddr).AddrPort()
			for {
				c, err := ln.Accept()
				if err != nil {
					return nil
				}
				_, _ = io.WriteString(c, "hello\n")
				_ = c.Close()
			}
		})
	}()
	var ok bool
	if w.own, ok = <-owned; !ok {
		t.Fatal("the session's server did not start")
	}
	return w
}

// reach reports whether uid gets the greeting of addr, and the error if
// not.
func (w *world) reach(uid int, addr netip.AddrPort) error {
	return w.ns.As(uid, func() error {
		c, err := net.DialTimeout("tcp", addr.String(), 500*time.Millisecond)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "hello\n" {
			return errors.New("no greeting: " + string(b))
		}
		return nil
	})
}

// sendUDP sends a datagram as uid and reports whether the stack's UDP
// service received it.
func (w *world) sendUDP(t *testing.T, uid int) bool {
	_ = w.ns.As(uid, func() error {
		c, err := net.Dial("udp", "10.89.0.2:53")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("query"))
		return err
	})
	_ = w.udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 64)
	n, _, err := w.udp.ReadFrom(buf)
	return err == nil && string(buf[:n]) == "query"
}

func tables(t *testing.T, ns *egresstest.NS) []string {
	c, err := nftables.New(nftables.WithNetNSFd(ns.FD()))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range ts {
		names = append(names, tb.Name)
	}
	return names
}

// TestFirewall: an admitted uid reaches the gateway, the proxy and its
// own server, and nothing else: not the forge (IPv4 or IPv6), not the
// metadata address, not another root service on loopback or on the
// container's address, no UDP. Other uids, root and a revoked uid keep
// the network; closing removes the table.
func TestFirewall(t *testing.T) {
	w := newWorld(t)
	all := map[string]netip.AddrPort{"gateway": w.gateway, "proxy": w.proxy, "own server": w.own, "loopback service": w.other,
		"webhook receiver": w.hook, "forge": w.forge, "forge over IPv6": w.forge6, "metadata": w.metadata}
	// Without the rules everything answers, so every refusal below is
	// the firewall's.
	for name, addr := range all {
		if err := w.reach(sessionUID, addr); err != nil {
			t.Fatalf("before the firewall, %s (%v): %v", name, addr, err)
		}
	}
	if !w.sendUDP(t, sessionUID) {
		t.Fatal("before the firewall, the UDP service got nothing")
	}

	fw, err := egress.Install(egress.Options{Rules: egress.Rules{Table: "disinto_test", Allow: []netip.AddrPort{w.gateway, w.proxy}}, NetNS: w.ns.FD(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fw.Close() })
	if err := fw.Admit(sessionUID); err != nil {
		t.Fatal(err)
	}
	if err := fw.Admit(sessionUID); err != nil {
		t.Fatalf("admitting twice: %v", err)
	}
	for name, addr := range all {
		err := w.reach(sessionUID, addr)
		switch name {
		case "gateway", "proxy", "own server":
			if err != nil {
				t.Errorf("session uid to %s (%v): %v", name, addr, err)
			}
		default:
			if err == nil {
				t.Errorf("session uid reached %s (%v)", name, addr)
			}
		}
	}
	if w.sendUDP(t, sessionUID) {
		t.Error("a session's UDP datagram reached the stack")
	}
	// A refused TCP connection fails at once rather than hanging.
	if err := w.reach(sessionUID, w.forge); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("forge: %v, want connection refused", err)
	}
	for _, uid := range []int{0, otherUID} {
		for name, addr := range all {
			if err := w.reach(uid, addr); err != nil {
				t.Errorf("uid %d (not admitted) to %s: %v", uid, name, err)
			}
		}
	}
	if err := fw.Revoke(sessionUID); err != nil {
		t.Fatal(err)
	}
	if err := w.reach(sessionUID, w.forge); err != nil {
		t.Errorf("revoked uid to the forge: %v", err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if ts := tables(t, w.ns); len(ts) != 0 {
		t.Errorf("tables left after Close: %v", ts)
	}
	if err := fw.Admit(sessionUID); err == nil {
		t.Error("admitted a uid to a closed firewall")
	}
}

// TestFirewallTableLifetime: the table is the process's own. A second
// install of the same name while it lives fails with a clear error, the
// kernel removes the table when its owner's socket goes (a crash), and
// a plain table of the same name left by an earlier process is replaced.
func TestFirewallTableLifetime(t *testing.T) {
	ns := egresstest.New(t)
	o := egress.Options{Rules: egress.Rules{Table: "disinto_life"}, NetNS: ns.FD(), Log: zerolog.Nop()}
	fw, err := egress.Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := egress.Install(o); err == nil || !strings.Contains(err.Error(), "another live process") {
		t.Errorf("second install: %v", err)
	}
	if err := egress.CloseSocketOnly(fw); err != nil {
		t.Fatal(err)
	}
	if ts := tables(t, ns); len(ts) != 0 {
		t.Errorf("the owner's socket closed, tables remain: %v", ts)
	}

	c, err := nftables.New(nftables.WithNetNSFd(ns.FD()))
	if err != nil {
		t.Fatal(err)
	}
	c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "disinto_life"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	fw, err = egress.Install(o)
	if err != nil {
		t.Fatalf("over a stale table: %v", err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if ts := tables(t, ns); len(ts) != 0 {
		t.Errorf("tables left: %v", ts)
	}
}
