package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// autocompactProbe is a tool call that shows the session's compaction
// setting in its tool result, which the model server records.
func autocompactProbe() claudetest.Block {
	return claudetest.Bash(`echo "AUTOCOMPACT=${CLAUDE_AUTOCOMPACT_PCT_OVERRIDE:-unset}"`)
}

// compactionSeen returns the AUTOCOMPACT= values the tool results of
// scenario sc on model showed.
func compactionSeen(model *claudetest.Server, sc string) []string {
	var out []string
	for _, r := range model.MessageRequests(sc) {
		for _, tr := range r.ToolResults {
			if _, v, ok := strings.Cut(tr, "AUTOCOMPACT="); ok {
				out = append(out, strings.Fields(v)[0])
			}
		}
	}
	return out
}

// deadBackend returns the address of an endpoint that accepts
// connections and drops them unanswered: a model server that is down,
// on a port nobody else can take while the test runs.
func deadBackend(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// approveTwice is a review session that approves, and approves again
// when it is resumed for a rebased head.
func approveTwice() []claudetest.Turn {
	return []claudetest.Turn{
		writeReview(`{"verdict":"APPROVE","verdict_reason":"as asked","review_markdown":"Looks right."}`),
		claudetest.Text("Review written."),
		writeReview(`{"verdict":"APPROVE","verdict_reason":"still right","review_markdown":"Still right after the rebase."}`),
		claudetest.Text("Re-review written."),
	}
}

// TestLaneCITimeoutAndUnreachableBackend: [limits] ci_timeout = "2s" in
// the project file escalates an issue whose CI never reports with
// ci.timeout within seconds (the reference waits 30 minutes), and a
// local-model agent whose backend does not answer claims nothing, warns
// once, and `disinto status` says the backend is unreachable.
func TestLaneCITimeoutAndUnreachableBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	dead := deadBackend(t)
	y := bootLane(t, laneOptions{
		localBots: []string{"down=dev-down"},
		project: then(withCI("statuses"), appendTOML(fmt.Sprintf(
			"[limits]\nci_timeout = \"2s\"\n\n[roles.dev]\ninterval = \"1s\"\n\n"+
				"[agents.down]\nbase_url = \"http://%s\"\nmodel = \"qwen\"\nforge_user = \"dev-down\"\npoll_interval = \"1s\"\n", dead))),
	}, claudetest.Scenario{Name: "lane-ci", Turns: []claudetest.Turn{laneImplement("waits for CI"), claudetest.Text("Pushed.")}})
	w := y.watch(t)

	n := w.backlogIssue("Wait for CI", "scenario: lane-ci\n\nAdd a file.")
	var pushed time.Time
	rig.Await(t, "the pull request", 3*time.Minute, y.died, func() bool {
		ps, err := w.admin.ListPulls(w.ctx, forge.StateOpen)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 {
			pushed = time.Now()
			return true
		}
		return false
	})
	rig.Await(t, "the CI timeout", 2*time.Minute, y.died, func() bool {
		i := w.issue(n)
		return i.HasLabel(forge.LabelBlocked) && !i.HasLabel(forge.LabelInProgress)
	})
	waited := time.Since(pushed)
	t.Logf("escalated %s after the pull request opened", waited.Round(time.Second))
	if waited > time.Minute {
		t.Errorf("escalated after %s: the project's ci_timeout of 2s did not apply", waited)
	}
	recs := y.devRecords(t)
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonEscalated || recs[0].Code != ledger.CodeCITimeout || recs[0].Issue != n {
		t.Fatalf("dev ledger: %+v", recs)
	}
	cs, err := w.admin.ListComments(w.ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Author == "dev-down" {
			t.Errorf("the agent whose backend is down commented on #%d: %q", n, c.Body)
		}
	}
	if ps, _ := w.admin.ListPulls(w.ctx, forge.StateAll); len(ps) != 1 || ps[0].Author != "dev-bot" {
		t.Errorf("pull requests: %+v", ps)
	}

	// What the operator sees of the backend that is down.
	st := y.status(t)
	var down *backendJSON
	for i := range st.Backends {
		if st.Backends[i].Backend == "down" {
			down = &st.Backends[i]
		}
	}
	if down == nil || down.Reachable || down.Checked == "" || down.Error == "" {
		t.Fatalf("status backends: %+v", st.Backends)
	}
	if !st.hasJob("dev@down") {
		t.Errorf("no dev@down job in status: %+v", st.Jobs)
	}
	if out := y.MustRun(t, nil, "status"); !strings.Contains(out, "backend down (http://"+dead+"): UNREACHABLE since") {
		t.Errorf("status does not say the backend is unreachable:\n%s", out)
	}
	if lines := grepLines(y.d.Out.String(), "model backend unreachable"); strings.Count(lines, "\n") != 0 || lines == "" {
		t.Errorf("the daemon did not warn exactly once that the backend is unreachable:\n%s", lines)
	}
}

// TestLaneReviewRoundsAndInFlight: in_flight = 2 in the project file
// works two independent issues at once, both merged; review_rounds = 1
// blocks an issue with review.exhausted at the second change request.
func TestLaneReviewRoundsAndInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	const exhaustPR = 6 // issues 1 and 2 become pull requests 3 and 4; issue 5 becomes 6
	y := bootLane(t, laneOptions{project: appendTOML("[limits]\nreview_rounds = 1\nin_flight = 2\n")},
		claudetest.Scenario{Name: "lane-review-x", Marker: fmt.Sprintf("Review pull request #%d of", exhaustPR), Turns: []claudetest.Turn{
			writeReview(`{"verdict":"REQUEST_CHANGES","verdict_reason":"name it","review_markdown":"- **medium** name the thing"}`),
			claudetest.Text("Review written."),
			writeReview(`{"verdict":"REQUEST_CHANGES","verdict_reason":"still unnamed","review_markdown":"- **medium** still unnamed"}`),
			claudetest.Text("Re-review written."),
		}},
		claudetest.Scenario{Name: "lane-review", Marker: "Review pull request #", Turns: approveTwice()},
		claudetest.Scenario{Name: "lane-x", Turns: []claudetest.Turn{
			laneImplement("thing"), claudetest.Text("Pushed."),
			laneImplement("name: thing"), claudetest.Text("Named it."),
			laneImplement("name: thing two"), claudetest.Text("Renamed it."),
		}},
		// The second of two parallel pull requests to be approved is behind
		// main once the first merges: the session is asked to rebase it.
		claudetest.Scenario{Name: "lane-ok", Turns: []claudetest.Turn{laneImplement("done"), claudetest.Text("Pushed."),
			rebaseTurn(), claudetest.Text("Rebased.")}},
	)
	w := y.watch(t)

	// Two issues filed, then put on the backlog together.
	var pair []int64
	for _, title := range []string{"First", "Second"} {
		iss, err := w.admin.CreateIssue(w.ctx, forge.NewIssue{Title: title, Body: "scenario: lane-ok\n\nAdd a file."})
		if err != nil {
			t.Fatal(err)
		}
		pair = append(pair, iss.Number)
	}
	for _, n := range pair {
		if err := w.admin.AddLabels(w.ctx, n, forge.LabelBacklog); err != nil {
			t.Fatal(err)
		}
	}
	both := false
	rig.Await(t, "both issues worked at once", 3*time.Minute, y.died, func() bool {
		for _, n := range pair {
			i := w.issue(n)
			if !i.HasLabel(forge.LabelInProgress) || !i.AssignedTo("dev-bot") {
				return false
			}
		}
		both = true
		return true
	})
	if !both {
		t.Fatal("unreachable")
	}
	for _, n := range pair {
		if pr := w.mergedPull(n); pr.Author != "dev-bot" {
			t.Errorf("pull request #%d is by %s", pr.Number, pr.Author)
		}
	}

	// One round of changes is answered; the second change request blocks.
	x := w.backlogIssue("Name the thing", "scenario: lane-x\n\nAdd a named thing.")
	rig.Await(t, "review.exhausted", 4*time.Minute, y.died, func() bool {
		i := w.issue(x)
		return i.HasLabel(forge.LabelBlocked) && !i.HasLabel(forge.LabelInProgress)
	})
	rs := w.botReviews(exhaustPR)
	if len(rs) != 2 || rs[0].State != forge.ReviewRequestChanges || rs[1].State != forge.ReviewRequestChanges {
		t.Errorf("reviews of #%d: %+v", exhaustPR, rs)
	}
	var last ledger.Record
	for _, r := range y.devRecords(t) {
		if r.Issue == x {
			last = r
		}
	}
	if last.Reason != ledger.ReasonBlocked || last.Code != ledger.CodeReviewExhausted {
		t.Errorf("the last run of #%d: %+v", x, last)
	}
	// The session implemented (turns 0, 1) and answered one round (2, 3);
	// a second round would have asked for turns 4 and 5.
	if got := len(y.model.MessageRequests("lane-x")); got != 4 {
		t.Errorf("the dev session of #%d made %d model requests, want 4 (one round of changes)", x, got)
	}
}

// TestLaneLocalAgent: a project file with [agents.local] makes the daemon
// run a second dev agent, acting as its own bot (dev-local) on its own
// backend (a second model server), beside the default one: each merges
// an issue, and only the local one's sessions compact at compact_pct.
func TestLaneLocalAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	devTurns := func() []claudetest.Turn {
		return []claudetest.Turn{claudetest.Tools(autocompactProbe()), laneImplement("done"), claudetest.Text("Pushed."),
			rebaseTurn(), claudetest.Text("Rebased.")}
	}
	local, localURL := claudetest.Start(t,
		claudetest.Scenario{Name: "lane-a", Turns: devTurns()},
		claudetest.Scenario{Name: "lane-b", Turns: devTurns()},
	)
	y := bootLane(t, laneOptions{
		localBots: []string{"local=dev-local"},
		project: appendTOML(fmt.Sprintf("[agents.local]\nbase_url = %q\nmodel = \"qwen-local\"\nforge_user = \"dev-local\"\n"+
			"compact_pct = 55\npoll_interval = \"2s\"\n", localURL)),
	},
		claudetest.Scenario{Name: "lane-review", Marker: "Review pull request #", Turns: approveTwice()},
		claudetest.Scenario{Name: "lane-a", Turns: devTurns()},
		claudetest.Scenario{Name: "lane-b", Turns: devTurns()},
	)
	w := y.watch(t)

	// The first issue goes to whichever agent is quicker; while it holds
	// it (in_flight 1), the second can only go to the other.
	a := w.backlogIssue("First", "scenario: lane-a\n\nAdd a file.")
	rig.Await(t, "the first issue claimed", 3*time.Minute, y.died, func() bool {
		return w.issue(a).HasLabel(forge.LabelInProgress) && len(w.issue(a).Assignees) == 1
	})
	b := w.backlogIssue("Second", "scenario: lane-b\n\nAdd a file.")
	authors := map[string]int64{}
	for _, n := range []int64{a, b} {
		pr := w.mergedPull(n)
		authors[pr.Author] = n
	}
	if _, ok := authors["dev-bot"]; !ok || len(authors) != 2 {
		t.Fatalf("merged pull requests by %v, want one by dev-bot and one by dev-local", authors)
	}
	if _, ok := authors["dev-local"]; !ok {
		t.Fatalf("merged pull requests by %v, want one by dev-local", authors)
	}
	localSc := "lane-a"
	if authors["dev-local"] == b {
		localSc = "lane-b"
	}
	defaultSc := map[string]string{"lane-a": "lane-b", "lane-b": "lane-a"}[localSc]
	if got := slices.Compact(compactionSeen(local, localSc)); !slices.Equal(got, []string{"55"}) {
		t.Errorf("the local agent's session saw CLAUDE_AUTOCOMPACT_PCT_OVERRIDE %v, want [55]", got)
	}
	if got := slices.Compact(compactionSeen(y.model, defaultSc)); !slices.Equal(got, []string{"unset"}) {
		t.Errorf("the default agent's session saw CLAUDE_AUTOCOMPACT_PCT_OVERRIDE %v, want it unset", got)
	}
	if n := len(local.MessageRequests(defaultSc)) + len(y.model.MessageRequests(localSc)); n != 0 {
		t.Errorf("a session ran on the other agent's backend (%d requests)", n)
	}
	// Each identity keeps its own state and clone: the local agent's
	// issue never had a state in the default agent's directory (merged
	// states are pruned, so the directories are what is left to see).
	for _, p := range []string{"state/widgets/local/local", "clones/widgets/dev-local", "clones/widgets/dev-bot"} {
		if st, err := os.Stat(filepath.Join(y.Data, p)); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(y.Data, fmt.Sprintf("state/widgets/issue-%d", authors["dev-local"]))); err == nil {
		t.Errorf("the local agent's issue #%d has a state in the default dev agent's directory", authors["dev-local"])
	}
}
