package egress

import (
	"net"
	"net/netip"
)

// refusedPrefixes are never dialled by the proxy, whatever a project's
// allow list says and whatever a name resolves to: this host, the
// stack's private networks, link-local (the cloud metadata address among
// them) and every range that is not a public unicast destination, or
// that embeds an IPv4 address a gateway would translate to.
var refusedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "protocol-assignment"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// refusedAddr says why the proxy must not dial a, or "" if it may.
// local are the networks of this host's interfaces: the stack's network
// is refused even where it uses public addresses.
func refusedAddr(a netip.Addr, local []netip.Prefix) string {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "invalid"
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	for _, p := range local {
		if p.Contains(a) {
			return "local-network"
		}
	}
	return ""
}

// localPrefixes are the networks of this host's interfaces, as the
// network namespace the proxy runs in sees them. An error refuses every
// address (the caller fails closed).
func localPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ones, _ := ipn.Mask.Size()
		if ip.Unmap().Is4() && ones > 32 {
			ones -= 96
		}
		if p, err := ip.Unmap().Prefix(ones); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
