// Package egresstest runs a test inside network namespaces of its own, so
// that firewall rules, listeners and the processes probing them touch
// nothing of the host's: a namespace and everything in it goes away with
// the test. It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN). Imported from
// tests only.
package egresstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NS is a network namespace with its loopback up. Work is done in it with
// Do: sockets, listeners and child processes created by fn belong to it.
type NS struct {
	t  testing.TB
	fd int
}

// New makes a namespace that lives until the test ends. Without root the
// test is skipped.
func New(t testing.TB) *NS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	fdc := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with the goroutine, and
		// no other goroutine ever runs in the namespace it moved to.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		fdc <- fd
	}()
	var n *NS
	select {
	case err := <-errc:
		t.Fatalf("new network namespace: %v", err)
	case fd := <-fdc:
		n = &NS{t: t, fd: fd}
	}
	t.Cleanup(func() { _ = unix.Close(n.fd) })
	n.LinkUp("lo")
	return n
}

// FD is a file descriptor of the namespace (for netlink.Config.NetNS,
// egress.Options.NetNS).
func (n *NS) FD() int { return n.fd }

// Do runs fn on a thread of its own inside the namespace and waits for it.
func (n *NS) Do(fn func()) {
	n.t.Helper()
	if err := n.Try(func() error { fn(); return nil }); err != nil {
		n.t.Fatal(err)
	}
}

// Try runs fn inside the namespace and returns its error.
func (n *NS) Try(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Not unlocked: the thread, now in the namespace, dies with the
		// goroutine.
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Listen opens a TCP listener on addr inside the namespace.
func (n *NS) Listen(addr string) net.Listener {
	n.t.Helper()
	var ln net.Listener
	if err := n.Try(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		n.t.Fatalf("listen %s: %v", addr, err)
	}
	n.t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// rtnl sends one rtnetlink request inside the namespace and waits for its
// acknowledgement.
func (n *NS) rtnl(typ netlink.HeaderType, flags netlink.HeaderFlags, data []byte) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: n.fd})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Execute(netlink.Message{Header: netlink.Header{Type: typ, Flags: netlink.Request | netlink.Acknowledge | flags}, Data: data})
	return err
}

func attrs(t testing.TB, as ...netlink.Attribute) []byte {
	b, err := netlink.MarshalAttributes(as)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ifinfomsg is struct ifinfomsg: family, type, index, flags, change.
func ifinfomsg(index int32, flags, change uint32) []byte {
	b := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// LinkUp sets the interface name up.
func (n *NS) LinkUp(name string) {
	n.t.Helper()
	data := append(ifinfomsg(0, unix.IFF_UP, unix.IFF_UP), attrs(n.t, netlink.Attribute{Type: unix.IFLA_IFNAME, Data: append([]byte(name), 0)})...)
	if err := n.rtnl(unix.RTM_NEWLINK, 0, data); err != nil {
		n.t.Fatalf("set %s up: %v", name, err)
	}
}

// Index is the index of interface name inside the namespace.
func (n *NS) Index(name string) int {
	n.t.Helper()
	var idx int
	n.Do(func() {
		ifi, err := net.InterfaceByName(name)
		if err == nil {
			idx = ifi.Index
		}
	})
	if idx == 0 {
		n.t.Fatalf("no interface %s", name)
	}
	return idx
}

// AddAddr gives interface name the address p (e.g. 10.89.0.1/24);
// IPv6 addresses skip duplicate address detection, so they are usable at
// once.
func (n *NS) AddAddr(name string, p netip.Prefix) {
	n.t.Helper()
	fam := byte(unix.AF_INET)
	if p.Addr().Is6() {
		fam = unix.AF_INET6
	}
	hdr := make([]byte, unix.SizeofIfAddrmsg)
	hdr[0], hdr[1], hdr[2] = fam, byte(p.Bits()), unix.IFA_F_NODAD
	binary.NativeEndian.PutUint32(hdr[4:], uint32(n.Index(name)))
	a := p.Addr().AsSlice()
	data := append(hdr, attrs(n.t, netlink.Attribute{Type: unix.IFA_LOCAL, Data: a}, netlink.Attribute{Type: unix.IFA_ADDRESS, Data: a})...)
	if err := n.rtnl(unix.RTM_NEWADDR, netlink.Create|netlink.Excl, data); err != nil {
		n.t.Fatalf("add %v to %s: %v", p, name, err)
	}
}

// DefaultRoute routes every address of gw's family through gw on
// interface name.
func (n *NS) DefaultRoute(name string, gw netip.Addr) {
	n.t.Helper()
	fam := byte(unix.AF_INET)
	if gw.Is6() {
		fam = unix.AF_INET6
	}
	hdr := make([]byte, unix.SizeofRtMsg)
	hdr[0], hdr[4], hdr[5], hdr[6], hdr[7] = fam, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST
	oif := binary.NativeEndian.AppendUint32(nil, uint32(n.Index(name)))
	data := append(hdr, attrs(n.t, netlink.Attribute{Type: unix.RTA_GATEWAY, Data: gw.AsSlice()}, netlink.Attribute{Type: unix.RTA_OIF, Data: oif})...)
	if err := n.rtnl(unix.RTM_NEWROUTE, netlink.Create|netlink.Excl, data); err != nil {
		n.t.Fatalf("default route via %v: %v", gw, err)
	}
}

// Veth links this namespace to peer with a pair of virtual ethernet
// interfaces, name here and peerName there, both up.
func (n *NS) Veth(name string, peer *NS, peerName string) {
	n.t.Helper()
	peerInfo := append(ifinfomsg(0, 0, 0), attrs(n.t,
		netlink.Attribute{Type: unix.IFLA_IFNAME, Data: append([]byte(peerName), 0)},
		netlink.Attribute{Type: unix.IFLA_NET_NS_FD, Data: binary.NativeEndian.AppendUint32(nil, uint32(peer.fd))})...)
	const vethInfoPeer = 1 // VETH_INFO_PEER
	info := attrs(n.t,
		netlink.Attribute{Type: unix.IFLA_INFO_KIND, Data: []byte("veth\x00")},
		netlink.Attribute{Type: unix.NLA_F_NESTED | unix.IFLA_INFO_DATA, Data: attrs(n.t, netlink.Attribute{Type: unix.NLA_F_NESTED | vethInfoPeer, Data: peerInfo})})
	data := append(ifinfomsg(0, 0, 0), attrs(n.t,
		netlink.Attribute{Type: unix.IFLA_IFNAME, Data: append([]byte(name), 0)},
		netlink.Attribute{Type: unix.NLA_F_NESTED | unix.IFLA_LINKINFO, Data: info})...)
	if err := n.rtnl(unix.RTM_NEWLINK, netlink.Create|netlink.Excl, data); err != nil {
		n.t.Fatalf("veth %s-%s: %v", name, peerName, err)
	}
	n.LinkUp(name)
	peer.LinkUp(peerName)
}

// As runs fn inside the namespace on a thread whose file-system uid is
// uid: the sockets fn opens belong to uid as netfilter sees them (meta
// skuid), as if a session process of that uid had opened them.
func (n *NS) As(uid int, fn func() error) error {
	return n.Try(func() error {
		// setfsuid is per thread and this one dies after fn; it reports
		// the previous value, so a second call checks the first.
		_ = unix.Setfsuid(uid)
		if got, _ := unix.SetfsuidRetUid(uid); got != uid {
			return fmt.Errorf("setfsuid %d: still %d", uid, got)
		}
		return fn()
	})
}

// WithoutNetAdmin runs fn inside the namespace on a thread that has lost
// CAP_NET_ADMIN, as a container started without it: nftables refuses
// its changes.
func (n *NS) WithoutNetAdmin(fn func() error) error {
	return n.Try(func() error {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capget: %w", err)
		}
		data[0].Effective &^= 1 << unix.CAP_NET_ADMIN
		data[0].Permitted &^= 1 << unix.CAP_NET_ADMIN
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
		return fn()
	})
}

// Dial connects from inside the namespace (for http.Transport.DialContext,
// whose dials run on goroutines of their own).
func (n *NS) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Try(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}
