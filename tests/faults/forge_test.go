package faults

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestBaseline is the suite's control: with no fault the rig turns an
// issue into a merged pull request, so every fault test measures the fault.
func TestBaseline(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{}, approve(), implement("dev", "widget.txt", "a widget"))
	d := w.start()
	n := w.backlog("Add a widget", "dev")
	w.converge("none (baseline)", n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 3*time.Minute)
	t.Logf("one issue from backlog to merged: %d forge requests", w.proxy.Total())
	if errs := w.logLines("ERR", ""); len(errs) > 0 {
		t.Errorf("error lines without a fault:\n%s", strings.Join(errs, "\n"))
	}
	if err := d.Stop(t, time.Minute); err != nil {
		t.Errorf("the daemon's exit after SIGTERM: %v", err)
	}
}

// TestForgeFaults runs a dev and review run through each fault of the
// forge; every one must end merged, with no duplicate and no stuck claim.
func TestForgeFaults(t *testing.T) {
	t.Parallel()
	api := func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }
	for _, tc := range []struct {
		name  string
		chaos forgetest.Chaos
	}{
		{"forge 500 on 30% of requests", forgetest.Chaos{Seed: 30, FailRate: 0.3}},
		{"forge responses delayed 40s", forgetest.Chaos{Seed: 40, DelayRate: 0.1, Delay: 40 * time.Second}},
		{"forge resets mid-body", forgetest.Chaos{Seed: 50, ResetRate: 0.15}},
		{"forge truncated JSON", forgetest.Chaos{Seed: 60, TruncateRate: 0.15, Match: api}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{}, approve(), implement("dev", "widget.txt", "a widget"))
			w.proxy.SetChaos(tc.chaos)
			w.start()
			n := w.backlog("Add a widget", "dev")
			w.converge(tc.name, n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 5*time.Minute)
			t.Logf("%d forge requests, injected %v", w.proxy.Total(), w.proxy.Injected())
			w.proxy.SetChaos(forgetest.Chaos{})
			w.checkStreakLines()
		})
	}
}

// TestForgeOutageMidRun takes the forge (API and git) down for a minute
// while the dev session works: the ticks fail and back off, said once per
// streak, and once the forge is back the issue is merged.
func TestForgeOutageMidRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{}, approve(), implement("dev", "widget.txt", "a widget"))
	w.start()
	n := w.backlog("Add a widget", "dev")
	rig.Await(t, "the dev session", 2*time.Minute, w.died, func() bool { return len(w.Model.MessageRequests("dev")) > 0 })
	if err := w.proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	rig.Await(t, "a failed dev run while the forge is down", 2*time.Minute, w.died, func() bool {
		return len(w.tickFailures("dev")) > 0
	})
	for time.Since(down) < 60*time.Second {
		if why := w.died(); why != "" {
			t.Fatal(why)
		}
		time.Sleep(time.Second)
	}
	// A minute of failed ticks (backing off) is said once per job and
	// code, not once per tick.
	failed := w.tickFailures("dev")
	codes := map[ledger.Code]bool{}
	for _, r := range failed {
		codes[r.Code] = true
	}
	if errs := w.roleLines("ERR", "agent run failed", "dev"); len(failed) < 3 || len(errs) > len(codes) {
		t.Errorf("%d failed dev ticks during the outage, said in %d error lines (%d codes):\n%s", len(failed), len(errs), len(codes), strings.Join(errs, "\n"))
	}
	if err := w.proxy.SetDown(false); err != nil {
		t.Fatal(err)
	}
	w.converge("forge down 60s mid-run", n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 5*time.Minute)
	w.checkStreakLines()
	if len(w.logLines("INF", "agent runs succeed again")) == 0 {
		t.Errorf("no line said the failures ended:\n%s", w.output())
	}
}

// tickFailures returns the ledger's records of failed ticks of role (the
// records of work, which name an issue or pull request, aside).
func (w *world) tickFailures(role string) []ledger.Record {
	var out []ledger.Record
	for _, r := range w.ledger() {
		if r.Role == role && r.Reason == ledger.ReasonEngineError && r.Issue == 0 && r.PR == 0 {
			out = append(out, r)
		}
	}
	return out
}

// roleLines returns the daemon's lines at level containing msg of role.
func (w *world) roleLines(level, msg, role string) []string {
	var out []string
	for _, l := range w.logLines(level, msg) {
		if strings.Contains(l, "agent="+role) {
			out = append(out, l)
		}
	}
	return out
}

// checkStreakLines checks that failed ticks were said once per streak: a
// streak (failures in a row, of one code) is one error line and ends with
// one line saying the runs succeed again, so the error lines of a job are
// at most its recorded failures, and at most one per code for each
// recovery and the streak still running.
func (w *world) checkStreakLines() {
	w.t.Helper()
	for _, role := range []string{"dev", "review"} {
		failures := w.tickFailures(role)
		codes := map[ledger.Code]bool{}
		for _, r := range failures {
			codes[r.Code] = true
		}
		var errs []string
		for _, l := range w.roleLines("ERR", "agent run failed", role) {
			if !strings.Contains(l, "outcome=engine.shutdown") {
				errs = append(errs, l)
			}
		}
		recoveries := len(w.roleLines("INF", "agent runs succeed again", role))
		if len(errs) > len(failures) || len(errs) > (recoveries+1)*len(codes) {
			w.t.Errorf("%s: %d error lines for %d failed ticks (%d codes, %d recoveries):\n%s",
				role, len(errs), len(failures), len(codes), recoveries, strings.Join(errs, "\n"))
		}
	}
}
