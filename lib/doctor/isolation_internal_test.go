package doctor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/egress"
)

func TestCheckIsolation(t *testing.T) {
	unavailable := fmt.Errorf("%w: install nftables table x: operation not permitted (the process lacks CAP_NET_ADMIN)", egress.ErrUnavailable)
	for _, tc := range []struct {
		name  string
		euid  int
		probe error
		allow bool
		want  Status
		says  string
	}{
		{name: "root with the firewall", euid: 0, want: OK, says: "uids of their own"},
		{name: "not root", euid: 1000, want: Blocking, says: "running as uid 1000, not root"},
		{name: "not root, accepted", euid: 1000, allow: true, want: Warning, says: "running as uid 1000"},
		{name: "no NET_ADMIN", euid: 0, probe: unavailable, want: Blocking, says: "CAP_NET_ADMIN"},
		{name: "no NET_ADMIN, accepted", euid: 0, probe: unavailable, allow: true, want: Warning, says: "CAP_NET_ADMIN"},
		{name: "another failure", euid: 0, probe: errors.New("egress: table name"), allow: true, want: Blocking, says: "table name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probed := false
			r := &Report{}
			checkIsolation(r, Options{AllowUnisolated: tc.allow, Euid: func() int { return tc.euid },
				ProbeFirewall: func() error { probed = true; return tc.probe }})
			if len(r.Findings) != 1 {
				t.Fatalf("findings %+v, want one", r.Findings)
			}
			f := r.Findings[0]
			if f.Check != CheckIsolation || f.Status != tc.want || !strings.Contains(f.Message, tc.says) {
				t.Fatalf("finding %q, want %s saying %q", f, tc.want, tc.says)
			}
			if f.Status != OK && f.Fix == "" {
				t.Errorf("finding %q without a fix", f)
			}
			if probed != (tc.euid == 0) {
				t.Errorf("probed the firewall: %v, as uid %d", probed, tc.euid)
			}
		})
	}
}

// TestProbeFirewall installs and removes the daemon's rules for real
// where this process may: a kernel or a rule the probe cannot install
// while the daemon could (or the reverse) fails here.
func TestProbeFirewall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("nftables takes root")
	}
	err := probeFirewall()
	if errors.Is(err, egress.ErrUnavailable) {
		t.Skipf("no nftables here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
