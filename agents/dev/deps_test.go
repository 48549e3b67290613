package dev

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// logLines collects the runtime's log lines (the ticks' loggers).
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns the lines with message msg about issue n.
func (l *logLines) count(msg string, n int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := 0
	for line := range strings.SplitSeq(l.buf.String(), "\n") {
		var e struct {
			Msg   string `json:"message"`
			Issue int64  `json:"issue"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == msg && e.Issue == n {
			got++
		}
	}
	return got
}

// captureLogs makes the harness's runtime log to the returned lines too.
func captureLogs(h *harness) *logLines {
	l := &logLines{}
	h.rt = agent.New(agent.Options{Ledger: h.led, Log: zerolog.New(io.MultiWriter(moveWatch{h.t, machine()}, l)), Now: h.clock})
	return l
}

// depComments returns the bot's status comments on issue n.
func depComments(h *harness, n int64) []forge.Comment {
	h.t.Helper()
	var out []forge.Comment
	for _, c := range h.f.commentsOf(n) {
		if _, ok := forge.FindMarker(c.Body, forge.MarkerDepWait); ok && c.Author == bot {
			out = append(out, c)
		}
	}
	return out
}

// oneDepComment returns the one status comment on n and fails otherwise.
func oneDepComment(h *harness, n int64) forge.Comment {
	h.t.Helper()
	cs := depComments(h, n)
	if len(cs) != 1 {
		h.t.Fatalf("issue #%d has %d status comments, want 1: %+v", n, len(cs), cs)
	}
	return cs[0]
}

// quietTicks ticks twice and fails if they did more than list (and the
// other operations allowed).
func quietTicks(h *harness, allowed ...string) {
	h.t.Helper()
	before := h.f.fake.Calls()
	h.tick()
	h.tick()
	calls, _ := h.f.callsSince(before)
	for op := range calls {
		if op != "ListIssues" && op != "ListPulls" && !slices.Contains(allowed, op) {
			h.t.Fatalf("ticks without a change made requests beyond the listings: %v", calls)
		}
	}
}

func TestDepWaitCommentFollowsDependencies(t *testing.T) {
	h := newHarness(t, pushing)
	logs := captureLogs(h)
	first := h.f.addIssue("first", "open")
	second := h.f.addIssue("second", "open")
	n := h.f.addIssue("needs both", "## Depends on\n- #1\n- #2\n", forge.LabelBacklog)

	h.tick()
	c := oneDepComment(h, n)
	if !strings.Contains(c.Body, "Waiting on #1, #2") || !strings.Contains(c.Body, "- #1 is open.") {
		t.Fatalf("status comment:\n%s", c.Body)
	}
	if len(h.r.Calls()) != 0 {
		t.Fatal("a waiting issue was worked")
	}
	quietTicks(h)

	h.f.close(first)
	h.tick()
	got := oneDepComment(h, n)
	if got.ID != c.ID || !strings.Contains(got.Body, "Waiting on #2:") || strings.Contains(got.Body, "#1 is open") {
		t.Fatalf("after #1 closed: comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	quietTicks(h)
	if len(h.r.Calls()) != 0 {
		t.Fatal("worked while #2 is open")
	}

	h.f.close(second)
	h.tick()
	got = oneDepComment(h, n)
	if got.ID != c.ID || !strings.Contains(got.Body, "Dependencies satisfied") {
		t.Fatalf("after #2 closed: comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	if len(h.r.Calls()) != 1 {
		t.Fatalf("%d sessions after the dependencies closed, want 1", len(h.r.Calls()))
	}
	h.wantStage(n, StageAwaitingCI)
	if w, s := logs.count("waiting on dependencies", n), logs.count("dependencies satisfied", n); w != 2 || s != 1 {
		t.Fatalf("logged the wait %d times and the end %d times, want once per change (2 and 1)", w, s)
	}
}

func TestDepWaitFollowedWhileBusy(t *testing.T) {
	h := newHarness(t, pushing)
	busy := h.f.addIssue("ready", "x", forge.LabelBacklog)
	dep := h.f.addIssue("dep", "open")
	n := h.f.addIssue("needs 2", "Depends on #2.", forge.LabelBacklog)
	h.tick()
	h.wantStage(busy, StageAwaitingCI)
	if !strings.Contains(oneDepComment(h, n).Body, "Waiting on #2") {
		t.Fatal("no wait published while the agent is busy")
	}
	h.f.close(dep)
	h.tick()
	if !strings.Contains(oneDepComment(h, n).Body, "Dependencies satisfied") {
		t.Fatal("the comment did not follow while the agent is busy")
	}
	if _, ok := h.state(n); ok {
		t.Fatal("claimed beyond in_flight")
	}
	quietTicks(h, "CombinedStatus") // the busy issue's CI
}

func TestDepWontfixKeepsWaiting(t *testing.T) {
	h := newHarness(t, pushing)
	dep := h.f.addIssue("first", "not doing it")
	n := h.f.addIssue("needs 1", "## Depends on\n- #1\n", forge.LabelBacklog)
	if err := h.f.owner.AddLabels(t.Context(), dep, forge.LabelWontfix); err != nil {
		t.Fatal(err)
	}
	h.f.close(dep)

	h.tick()
	if _, ok := h.state(n); ok || len(h.r.Calls()) != 0 || len(h.f.issue(n).Assignees) != 0 {
		t.Fatal("claimed an issue whose dependency was closed as won't fix")
	}
	c := oneDepComment(h, n)
	if !strings.Contains(c.Body, "#1 was closed as won't fix") {
		t.Fatalf("status comment:\n%s", c.Body)
	}
	quietTicks(h) // the record is trusted: no read of #1 every tick

	// Read again after depRecheck; nothing changed, nothing is posted.
	h.advanceClock(depRecheck)
	before := h.f.fake.Calls()
	h.tick()
	calls, _ := h.f.callsSince(before)
	if calls["GetIssue"] != 1 || calls["EditComment"]+calls["CreateComment"] != 0 {
		t.Fatalf("recheck made %v, want one read and no comment", calls)
	}

	// Someone changes their mind: the closed issue loses wontfix.
	if err := h.f.owner.RemoveLabels(t.Context(), dep, forge.LabelWontfix); err != nil {
		t.Fatal(err)
	}
	h.advanceClock(depRecheck)
	h.tick()
	if got := oneDepComment(h, n); got.ID != c.ID || !strings.Contains(got.Body, "Dependencies satisfied") {
		t.Fatalf("comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	h.wantStage(n, StageAwaitingCI)
}

func TestDepWontfixFoundAtPick(t *testing.T) {
	// An issue that never waited: pick reads its closed dependency.
	h := newHarness(t, pushing)
	dep := h.f.addIssue("first", "x")
	h.f.close(dep)
	h.tick()
	if err := h.f.owner.AddLabels(t.Context(), dep, forge.LabelWontfix); err != nil {
		t.Fatal(err)
	}
	n := h.f.addIssue("needs 1", "This depends on #1.", forge.LabelBacklog)
	h.tick()
	if _, ok := h.state(n); ok {
		t.Fatal("claimed")
	}
	if !strings.Contains(oneDepComment(h, n).Body, "won't fix") {
		t.Fatal("no reason given")
	}
}

func TestDepMissingWaits(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("needs 99", "Depends on #99.", forge.LabelBacklog)
	h.tick()
	if _, ok := h.state(n); ok {
		t.Fatal("claimed an issue whose dependency does not exist")
	}
	if !strings.Contains(oneDepComment(h, n).Body, "#99 does not exist") {
		t.Fatal("no reason given")
	}
	quietTicks(h)
}

func TestDepCommentFoundAgainWithoutRecords(t *testing.T) {
	h := newHarness(t, pushing)
	dep := h.f.addIssue("first", "open")
	n := h.f.addIssue("needs 1", "Depends on #1.", forge.LabelBacklog)
	// A comment by someone else carrying the marker is not the agent's.
	forged, err := h.f.owner.CreateComment(t.Context(), n, "<!-- disinto:dep-wait issue=2 --> not yours")
	if err != nil {
		t.Fatal(err)
	}
	h.tick()
	c := oneDepComment(h, n)
	if err := os.Remove(h.a.depRecordsPath()); err != nil {
		t.Fatal(err)
	}
	h.a = h.newAgent() // a restart with the records lost
	h.f.close(dep)
	h.tick()
	if got := oneDepComment(h, n); got.ID != c.ID || !strings.Contains(got.Body, "Dependencies satisfied") {
		t.Fatalf("comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	for _, cm := range h.f.commentsOf(n) {
		if cm.ID == forged.ID && cm.Body != forged.Body {
			t.Fatal("edited someone else's comment")
		}
	}
	h.wantStage(n, StageAwaitingCI)
}

func TestDepCycleBlocksEveryMember(t *testing.T) {
	h := newHarness(t, pushing)
	a := h.f.addIssue("a", "Depends on #2.", forge.LabelBacklog)
	b := h.f.addIssue("b", "## Depends on\n- #1\n", forge.LabelBacklog)
	c := h.f.addIssue("c", "Depends on #1.", forge.LabelBacklog) // waits on the cycle, not on it
	h.tick()
	for n, path := range map[int64]string{a: "#1 → #2 → #1", b: "#2 → #1 → #2"} {
		h.wantLabels(n, forge.LabelBlocked)
		h.wantComment(n, "`deps.cycle`")
		h.wantComment(n, path)
	}
	recs := h.led.Records()
	if len(recs) != 2 {
		t.Fatalf("%d ledger records, want 2: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Reason != ledger.ReasonBlocked || r.Code != codeDepsCycle || (r.Issue != a && r.Issue != b) {
			t.Fatalf("ledger record %+v", r)
		}
	}
	if len(h.r.Calls()) != 0 {
		t.Fatal("worked an issue")
	}
	if !strings.Contains(oneDepComment(h, c).Body, "Waiting on #1") {
		t.Fatal("the dependant of the cycle does not say what it waits for")
	}
	comments := len(h.f.commentsOf(a)) + len(h.f.commentsOf(b))
	quietTicks(h) // blocked once, not every tick
	if len(h.led.Records()) != 2 || len(h.f.commentsOf(a))+len(h.f.commentsOf(b)) != comments {
		t.Fatal("blocked again")
	}

	// A human sends both back without breaking the cycle: blocked again.
	for _, n := range []int64{a, b} {
		if err := h.f.owner.RemoveLabels(t.Context(), n, forge.LabelBlocked); err != nil {
			t.Fatal(err)
		}
		if err := h.f.owner.AddLabels(t.Context(), n, forge.LabelBacklog); err != nil {
			t.Fatal(err)
		}
	}
	h.tick()
	h.wantLabels(a, forge.LabelBlocked)
	h.wantLabels(b, forge.LabelBlocked)
	if len(h.led.Records()) != 4 {
		t.Fatalf("%d ledger records, want 4", len(h.led.Records()))
	}

	// The cycle broken, #1 is worked.
	if _, err := h.f.owner.EditIssue(t.Context(), a, forge.IssueEdit{Body: ptr("No dependencies.")}); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.RemoveLabels(t.Context(), a, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(t.Context(), a, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.wantStage(a, StageAwaitingCI)
}

func ptr[T any](v T) *T { return &v }
