package egress

import (
	"net/netip"
	"testing"
)

func TestRefusedAddr(t *testing.T) {
	local := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}
	for addr, want := range map[string]string{
		"169.254.169.254":        "link-local",
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local",
		"127.0.0.1":              "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:169.254.169.254": "link-local",
		"10.1.2.3":               "private",
		"172.18.0.2":             "private",
		"192.168.1.1":            "private",
		"fd00::1":                "private (unique local)",
		"100.100.100.100":        "shared (carrier NAT)",
		"0.0.0.0":                "this-network",
		"::":                     "unspecified",
		"224.0.0.1":              "multicast",
		"255.255.255.255":        "reserved",
		"64:ff9b::a9fe:a9fe":     "NAT64",
		"2002:a9fe:a9fe::1":      "6to4",
		"203.0.113.9":            "local-network",
		"198.51.100.7":           "",
		"2a00:1450:4001::1":      "",
		"8.8.8.8":                "",
	} {
		if got := refusedAddr(netip.MustParseAddr(addr), local); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}
