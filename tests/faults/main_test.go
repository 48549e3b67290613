// Package faults is the fault-injection suite: the real disinto daemon
// against the real Gitea behind a fault-injecting proxy (every API call
// and git transfer of the daemon goes through it), the real claude CLI
// against the scripted model server, and faults of the forge, the model,
// the CLI, the disk and the daemon's own process. After every fault the
// suite checks that the factory converges: the issue merged or blocked
// with the right outcome, no duplicate pull request or comment, no stuck
// claim, no lost commit, no process left behind, one log line per
// failure streak.
package faults

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// gitea is the forge shared by the suite; each test makes its own users
// and repository.
var gitea forgetest.Shared

func TestMain(m *testing.M) {
	// The worlds spend their time waiting on the forge, the model and
	// timeouts, not on the CPU: unless told otherwise, run more of them at
	// once than there are cores.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	code := forgetest.Main(m, &gitea)
	rig.RemoveBinary()
	// Every daemon is gone now: so must be every session and CLI.
	if left := leftovers(); len(left) > 0 {
		fmt.Printf("faults: processes left after the suite:\n  %s\n", strings.Join(left, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	fmt.Print(tally.summary())
	os.Exit(code)
}

// tally is the suite's record of faults tried and how the factory fared.
var tally = &record{}

// record counts, per fault, the runs that converged and the duplicates
// and leftovers found.
type record struct {
	mu   sync.Mutex
	rows map[string]*row
}

type row struct {
	tried, converged, duplicates, stuck, leaks int
}

// note records one try of fault.
func (r *record) note(fault string, converged bool, duplicates, stuck, leaks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rows == nil {
		r.rows = map[string]*row{}
	}
	w := r.rows[fault]
	if w == nil {
		w = &row{}
		r.rows[fault] = w
	}
	w.tried++
	if converged {
		w.converged++
	}
	w.duplicates += duplicates
	w.stuck += stuck
	w.leaks += leaks
}

func (r *record) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.rows))
	for n := range r.rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	var sum row
	fmt.Fprintf(&b, "faults: %-28s %5s %9s %10s %5s %5s\n", "fault", "tried", "converged", "duplicates", "stuck", "leaks")
	for _, n := range names {
		w := r.rows[n]
		fmt.Fprintf(&b, "faults: %-28s %5d %9d %10d %5d %5d\n", n, w.tried, w.converged, w.duplicates, w.stuck, w.leaks)
		sum.tried += w.tried
		sum.converged += w.converged
		sum.duplicates += w.duplicates
		sum.stuck += w.stuck
		sum.leaks += w.leaks
	}
	fmt.Fprintf(&b, "faults: %-28s %5d %9d %10d %5d %5d\n", "total", sum.tried, sum.converged, sum.duplicates, sum.stuck, sum.leaks)
	return b.String()
}
