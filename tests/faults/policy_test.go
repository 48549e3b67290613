package faults

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestRevokedReviewToken revokes the review bot's token while the daemon
// runs: one error line, the review job disabled in status, /readyz 503 on
// both listeners, and nothing more said while it stays revoked; the dev
// job goes on.
func TestRevokedReviewToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{}, approve(), implement("dev", "widget.txt", "a widget"))
	d := w.start()
	rig.Await(t, "the daemon ready", time.Minute, w.died, func() bool {
		code, _ := get(t, "http://"+d.StatusListen+"/readyz")
		return code == http.StatusOK
	})
	basic, err := forge.New(forge.Options{URL: w.Srv.URL, User: w.Reviewer.Login, Password: w.Reviewer.Password})
	if err != nil {
		t.Fatal(err)
	}
	if err := basic.DeleteToken(testCtx(t), "test"); err != nil {
		t.Fatalf("revoke the review token: %v", err)
	}
	rig.Await(t, "the review job disabled", time.Minute, w.died, func() bool {
		st := w.status()
		return len(st.Disabled) == 1 && st.Disabled[0].Role == "review"
	})
	// The disabled job re-checks the token at each of its runs, silently:
	// let it do so three times.
	checks := func() int { return w.proxy.Counts()["GET /api/v1/user"] }
	before := checks()
	rig.Await(t, "three silent re-checks of the review token", time.Minute, w.died, func() bool { return checks() >= before+3 })
	errs := w.logLines("ERR", "")
	if len(errs) != 1 || !strings.Contains(errs[0], "FORGE_REVIEW_TOKEN") {
		t.Errorf("%d error lines, want one naming FORGE_REVIEW_TOKEN:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	for _, addr := range []string{d.StatusListen, d.Listen} {
		code, body := get(t, "http://"+addr+"/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "widgets review disabled") {
			t.Errorf("/readyz on %s: %d %q, want 503 naming the disabled review job", addr, code, body)
		}
	}
	if st := w.status(); len(st.Failing) != 0 {
		t.Errorf("a disabled job counts as failing: %+v", st.Failing)
	}
	tally.note("review token revoked", len(errs) == 1, 0, 0, 0)
	// The dev job is not held back by the review bot's token.
	n := w.backlog("Add a widget", "dev")
	rig.Await(t, "the dev agent's pull request", 3*time.Minute, w.died, func() bool {
		ps, err := w.Repo.ListPulls(testCtx(t), forge.StateOpen)
		return err == nil && len(ps) == 1 && fixes(ps[0], n)
	})
}

// TestForgeStopsAnswering makes the forge accept requests and never
// answer: the tick fails within its deadline, and once the forge answers
// again the next ticks succeed and an issue is merged.
func TestForgeStopsAnswering(t *testing.T) {
	t.Parallel()
	const tickTimeout = 20 * time.Second
	w := newWorld(t, setup{env: []string{"DISINTO_TICK_TIMEOUT=20"}}, approve(), implement("dev", "widget.txt", "a widget"))
	d := w.start()
	rig.Await(t, "the daemon ready", time.Minute, w.died, func() bool {
		code, _ := get(t, "http://"+d.StatusListen+"/readyz")
		return code == http.StatusOK
	})
	hung := time.Now()
	w.proxy.SetHung(true)
	var failed ledger.Record
	rig.Await(t, "a dev tick failing on the hung forge", 2*time.Minute, w.died, func() bool {
		for _, r := range w.ledger() {
			if r.Role == "dev" && r.Reason == ledger.ReasonEngineError && r.Start.After(hung) {
				failed = r
				return true
			}
		}
		return false
	})
	if wall := failed.End.Sub(failed.Start); wall > tickTimeout+5*time.Second {
		t.Errorf("the tick on a hung forge took %s, past its %s deadline: %+v", wall, tickTimeout, failed)
	}
	if failed.Code != ledger.CodeForgeUnavailable && failed.Code != "engine.tick_timeout" {
		t.Errorf("the tick on a hung forge failed with %s: %+v", failed.Code, failed)
	}
	w.proxy.SetHung(false)
	rig.Await(t, "the dev runs succeeding again", 3*time.Minute, w.died, func() bool {
		for _, l := range w.logLines("INF", "agent runs succeed again") {
			if strings.Contains(l, "agent=dev") {
				return true
			}
		}
		return false
	})
	n := w.backlog("Add a widget", "dev")
	w.converge("forge stops answering", n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 4*time.Minute)
	w.checkStreakLines()
}

// daemonStatus is what the suite reads of `disinto status --json`.
type daemonStatus struct {
	Disabled []struct {
		Project, Role, Reason string
	} `json:"disabled"`
	Failing []struct {
		Project, Role string
		Code          ledger.Code
		Count         int
	} `json:"failing"`
}

// status runs `disinto status --json` as an operator does.
func (w *world) status() daemonStatus {
	w.t.Helper()
	out, _, err := w.Run(nil, "status", "--json")
	if err != nil {
		w.t.Fatalf("disinto status --json: %v\n%s", err, out)
	}
	var st daemonStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		w.t.Fatalf("disinto status --json: %v\n%s", err, out)
	}
	return st
}

// get returns the status and body of a GET on url (0 when it fails).
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
