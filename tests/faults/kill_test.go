package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// Kill points of TestKillAtRandomPoints.
const (
	kills = 20
	// killSpan is about the number of forge requests (API and git) of one
	// issue from backlog to merged through dev and review; points are
	// drawn from kills·killSpan/killsPerIssue requests.
	killSpan      = 75
	killsPerIssue = 5
	maxKillIssues = 8
)

// TestKillAtRandomPoints sends SIGKILL to the daemon at 20 points of dev
// and review runs, each a forge request chosen at random (seeded:
// FAULTS_SEED repeats a run), the daemon being killed while that request
// is on its way to the forge; after each kill it restarts the daemon.
// Every issue must end merged exactly once, with nothing duplicated, lost
// or left behind.
func TestKillAtRandomPoints(t *testing.T) {
	t.Parallel()
	seed := uint64(20261201)
	if v := os.Getenv("FAULTS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FAULTS_SEED=%q: %v", v, err)
		}
		seed = s
	}
	rnd := rand.New(rand.NewPCG(seed, seed))
	span := kills * killSpan / killsPerIssue
	points := make([]int, 0, kills)
	for len(points) < kills {
		if p := 1 + rnd.IntN(span); !slices.Contains(points, p) {
			points = append(points, p)
		}
	}
	slices.Sort(points)
	t.Logf("seed %d (set FAULTS_SEED to repeat): SIGKILL at forge requests %v", seed, points)

	scenarios := []claudetest.Scenario{approve()}
	for i := 1; i <= maxKillIssues; i++ {
		scenarios = append(scenarios, implement(fmt.Sprintf("dev-%d-", i), fmt.Sprintf("widget-%d.txt", i), fmt.Sprintf("widget %d", i)))
	}
	w := newWorld(t, setup{}, scenarios...)
	var mu sync.Mutex
	killed := 0
	w.proxy.Observe(func(n int, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if killed < len(points) && n >= points[killed] {
			killed++
			w.daemon().Kill()
		}
	})
	done := func() int {
		mu.Lock()
		defer mu.Unlock()
		return killed
	}
	d := w.start()
	restarts := 0
	for i := 1; i <= maxKillIssues && (i == 1 || done() < kills); i++ {
		before := done()
		file, line := fmt.Sprintf("widget-%d.txt", i), fmt.Sprintf("widget %d", i)
		n := w.backlog(fmt.Sprintf("Add widget %d", i), fmt.Sprintf("dev-%d-", i))
		want := outcome{merged: true, file: file, line: line}
		fault := "daemon SIGKILL + restart"
		w.await(fault, n, want, 6*time.Minute, func() {
			if w.daemon().Exited() {
				restarts++
				d = w.start()
				w.poke(d)
			}
		})
		dups, stuck, leaks := w.verify(fault, n, want)
		for range done() - before {
			tally.note(fault, true, 0, 0, 0)
		}
		tally.note("(kill run issues)", true, dups, stuck, leaks)
		t.Logf("issue #%d merged after %d kills so far (%d restarts)", n, done(), restarts)
	}
	w.proxy.Observe(nil)
	if got := done(); got < kills {
		t.Errorf("only %d of %d kill points were reached in %d issues: the runs make fewer requests than killSpan", got, kills, maxKillIssues)
	}
	d = w.daemon()
	if d.Exited() && done() > restarts {
		// The last kill came after the last merge, so nothing restarted
		// the daemon yet: it must start again over what the kill left.
		d = w.start()
		rig.Await(t, "the daemon ready after the last kill", time.Minute, w.died, func() bool {
			code, _ := get(t, "http://"+d.StatusListen+"/readyz")
			return code == http.StatusOK || d.Exited()
		})
	}
	if d.Exited() {
		t.Fatalf("the daemon is not running at the end: %s", w.died())
	}
}
