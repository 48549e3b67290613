package config

import (
	"regexp"
	"strconv"
	"strings"
)

// Egress is what a project's sessions may reach besides the model
// gateway ([egress]): the hosts its egress proxy takes them to. Empty by
// default: no host at all.
type Egress struct {
	// Allow are host names ("proxy.golang.org"), or "*." and a domain
	// for every name below it, each optionally with ":port" (without
	// one, 443 and 80). Addresses are never allowed, and neither is any
	// internal address a name resolves to.
	Allow []string
}

// rawEgress mirrors [egress].
type rawEgress struct {
	Allow []string `toml:"allow"`
}

// egressHostRe is the grammar of an allow entry; lib/egress matches by
// the same one.
var egressHostRe = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]([a-z0-9-]*[a-z0-9])?(:[0-9]{1,5})?$`)

// validate reads r; bad reports each problem by key.
func (r rawEgress) validate(bad func(key, format string, args ...any)) Egress {
	var e Egress
	for _, h := range r.Allow {
		ok := egressHostRe.MatchString(h)
		if _, port, has := strings.Cut(h, ":"); ok && has {
			n, err := strconv.Atoi(port)
			ok = err == nil && n >= 1 && n <= 65535
		}
		if !ok {
			bad("egress.allow", "%q is not a host name (lowercase, with a dot), *.domain, or either with :port; addresses are never allowed", h)
			continue
		}
		e.Allow = append(e.Allow, h)
	}
	return e
}
