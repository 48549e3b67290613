// Package egress keeps model sessions off the network. Two parts:
//
//   - Firewall: nftables rules, in a table of the daemon's own in its
//     network namespace, that let the uids of its sessions reach the model
//     gateway and the egress proxy on this host and nothing else (see
//     Rules.build for the table and why each rule is there).
//   - Proxy: an HTTP forward proxy (CONNECT and plain HTTP) that takes a
//     session to the hosts its project's [egress] allow list names, and
//     never to a loopback, link-local, private or local-network address,
//     whatever the list says.
//
// A session's uid is admitted to the firewall's set when its workspace
// hands it out (the sandbox's guard), so that only this daemon's sessions
// are judged by this daemon's table: daemons sharing a network namespace
// (tests on one host) leave each other's sessions alone.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/rs/zerolog"
)

// ErrUnavailable means the kernel or the process's privileges cannot
// hold the rules: the caller must not run sessions with network access
// it cannot bound.
var ErrUnavailable = errors.New("egress firewall unavailable")

// Options configures Install.
type Options struct {
	Rules
	// NetNS is a file descriptor of the network namespace to install in;
	// 0 is the calling thread's (the daemon's).
	NetNS int
	Log   zerolog.Logger
}

// Names inside the firewall's table.
const (
	// TablePrefix begins the name of every table a daemon installs:
	// disinto_<instance>.
	TablePrefix = "disinto_"
	setSessions = "sessions"
	// chainOutput is the base chain; chainSession judges what a session
	// uid sends; chainLocalReply judges the answers to a session's
	// connection to a port of this host.
	chainOutput     = "output"
	chainSession    = "session"
	chainLocalReply = "local_reply"
)

// LocalMark is the conntrack mark bit of a session's TCP connection to
// a port of this host other than the gateway's and the proxy's. The
// connection is let out, and its answer decides: a server of a session
// uid may answer (a test suite's own server), any other may not.
const LocalMark uint32 = 0x00100000

// MinSessionUID is the lowest uid that counts as a session's when it
// answers a session's local connection: every daemon's pool lies above it
// (lib/config refuses a pool below), and no system account does. All
// daemons in one network namespace apply the same bound, so their tables
// agree on such answers.
const MinSessionUID = 100000

// ctDirReply is IP_CT_DIR_REPLY: a packet of the connection's answering
// side.
const ctDirReply = 1

// tableNameRe is what a table name may be: the kernel takes up to 256
// bytes; ours are short and plain.
var tableNameRe = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// Rules is what the firewall lets a session uid reach.
type Rules struct {
	// Table names the table, TablePrefix and the daemon's instance.
	Table string
	// Allow are the TCP endpoints sessions reach: the model gateway's
	// and the egress proxy's listeners.
	Allow []netip.AddrPort
}

// TableName is the table of the daemon with instance id.
func TableName(instance string) string { return TablePrefix + instance }

func (r Rules) validate() error {
	if !tableNameRe.MatchString(r.Table) {
		return fmt.Errorf("egress: table name %q: want letters, digits and '_'", r.Table)
	}
	for _, ap := range r.Allow {
		if !ap.IsValid() || ap.Port() == 0 || ap.Addr().Zone() != "" {
			return fmt.Errorf("egress: allowed endpoint %v is not an address and port", ap)
		}
	}
	return nil
}
