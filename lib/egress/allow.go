package egress

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// An allow list entry is a host name ("proxy.golang.org"), or "*." and a
// domain for every name below it ("*.githubusercontent.com", not the
// domain itself), optionally with ":port". Without a port the entry
// allows 443 (CONNECT, for HTTPS) and 80 (plain HTTP). Names only:
// addresses are never allowed, and lib/config checks the same grammar
// with the file and line of a bad entry.
var allowRe = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]([a-z0-9-]*[a-z0-9])?(:[0-9]{1,5})?$`)

type allowEntry struct {
	host     string // without "*."
	wildcard bool
	port     uint16 // 0: 80 and 443
}

// allowlist is one project's entries.
type allowlist []allowEntry

func parseAllow(patterns []string) (allowlist, error) {
	out := make(allowlist, 0, len(patterns))
	for _, p := range patterns {
		if !allowRe.MatchString(p) {
			return nil, fmt.Errorf("egress: allow entry %q: want a host name, or *.domain, optionally with :port", p)
		}
		e := allowEntry{host: p}
		if h, port, ok := strings.Cut(p, ":"); ok {
			n, err := strconv.Atoi(port)
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("egress: allow entry %q: bad port", p)
			}
			e.host, e.port = h, uint16(n)
		}
		e.host, e.wildcard = strings.CutPrefix(e.host, "*.")
		out = append(out, e)
	}
	return out, nil
}

// permits reports whether host (lowercase, no trailing dot) and port are
// allowed.
func (l allowlist) permits(host string, port uint16) bool {
	for _, e := range l {
		if e.port == 0 && port != 80 && port != 443 || e.port != 0 && port != e.port {
			continue
		}
		if !e.wildcard && host == e.host || e.wildcard && strings.HasSuffix(host, "."+e.host) {
			return true
		}
	}
	return false
}

// normalHost is host as the list compares it: lowercase, without a
// trailing dot.
func normalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
