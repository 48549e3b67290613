package doctor

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/egress"
)

// checkIsolation checks what the daemon needs to confine model sessions,
// as it will set them up: root, to give each session a uid of its own,
// and an egress firewall (nftables, with CAP_NET_ADMIN in the daemon's
// network namespace) that keeps those uids off the network. A short-lived
// table with the daemon's rules is installed and removed to prove the
// second. Without either the daemon refuses to run sessions, unless the
// operator accepted unisolated ones: then each is a warning.
func checkIsolation(r *Report, o Options) {
	weigh, fix := Blocking, "run the daemon as root with cap_add NET_ADMIN (the compose stack does), or accept unisolated sessions with --allow-unisolated-sessions (DISINTO_ALLOW_UNISOLATED_SESSIONS=1)"
	if o.AllowUnisolated {
		weigh, fix = Warning, "accepted with --allow-unisolated-sessions; run as root with NET_ADMIN to confine sessions"
	}
	euid := os.Geteuid
	if o.Euid != nil {
		euid = o.Euid
	}
	if uid := euid(); uid != 0 {
		r.add(CheckIsolation, "", weigh, fmt.Sprintf("running as uid %d, not root: sessions cannot get uids of their own and could read every credential of the daemon", uid), fix)
		return
	}
	probe := o.ProbeFirewall
	if probe == nil {
		probe = probeFirewall
	}
	if err := probe(); err != nil {
		if !errors.Is(err, egress.ErrUnavailable) {
			// Not a missing capability: a bug of ours or a kernel's
			// refusal worth reading whole.
			weigh = Blocking
		}
		r.add(CheckIsolation, "egress firewall", weigh, err.Error(), fix)
		return
	}
	r.add(CheckIsolation, "", OK, "sessions get uids of their own, and the egress firewall keeps them to the model gateway and the egress proxy", "")
}

// probeFirewall installs the daemon's rules in a table of its own, then
// removes it.
func probeFirewall() error {
	// Any addresses do: the rules' shape is what the kernel must accept.
	allow := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9"), netip.MustParseAddrPort("127.0.0.1:10")}
	fw, err := egress.Install(egress.Options{
		Rules: egress.Rules{Table: egress.TableName(fmt.Sprintf("doctor_%d", os.Getpid())), Allow: allow},
		Log:   zerolog.Nop(),
	})
	if err != nil {
		return err
	}
	return fw.Close()
}
