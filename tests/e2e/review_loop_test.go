package e2e

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

// The factory loop: one runtime (one daemon) runs the dev and the review
// agents of a project, both with the real claude CLI against the scripted
// model; the test plays CI. A backlog issue becomes a pull request that the
// review approves and the dev agent merges. A second issue's review asks
// for changes once: the dev session gets the review text, pushes a fix, the
// review resumes its own session with the incremental diff and approves,
// and the dev agent merges.
func TestFactoryLoop(t *testing.T) {
	t.Parallel()
	const rcReason = "rename the gizmo file"
	e := newDevEnv(t,
		// Review scenarios first: a review prompt may quote the issue.
		claudetest.Scenario{Name: "loop-review-2", Marker: "Review pull request #2 of proj", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"APPROVE","verdict_reason":"adds the widget"}`),
			claudetest.Text("Approved."),
		}},
		claudetest.Scenario{Name: "loop-review-4", Marker: "Review pull request #4 of proj", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"REQUEST_CHANGES","verdict_reason":"` + rcReason + `","review_markdown":"- **medium** gizmo.txt: wrong name"}`),
			claudetest.Text("Changes requested."),
			writeReview(`{"verdict":"APPROVE","verdict_reason":"renamed"}`),
			claudetest.Text("Approved."),
		}},
		claudetest.Scenario{Name: "loop-1", Turns: []claudetest.Turn{
			implement("widget.txt", "a widget"),
			claudetest.Text("Added widget.txt."),
		}},
		claudetest.Scenario{Name: "loop-3", Turns: []claudetest.Turn{
			implement("gizmo.txt", "a gizmo"),
			claudetest.Text("Added gizmo.txt."),
			implement("gizmo-renamed.txt", "a gizmo, renamed"),
			claudetest.Text("Addressed the review."),
		}},
	)
	b := e.newBot("dev-bot")
	rv := e.newReviewer(b.rt) // one daemon: one runtime for both agents

	// daemonPass ticks review then dev, as the scheduler staggers them, and
	// plays CI: every open pull request's new head turns green.
	daemonPass := func() {
		for _, p := range e.allPulls() {
			if p.State != forge.StateOpen {
				continue
			}
			cs, err := e.repo.CombinedStatus(testCtx(t), p.HeadSHA)
			if err != nil {
				t.Fatal(err)
			}
			if cs.State == "" {
				e.ci(p, forge.CISuccess, "green")
			}
		}
		rv.tick()
		b.tick()
	}
	until := func(what string, max int, cond func() bool) {
		t.Helper()
		for range max {
			daemonPass()
			if cond() {
				return
			}
		}
		t.Fatalf("after %d passes: %s did not happen", max, what)
	}

	n1 := e.issue("Add a widget", "scenario: loop-1\n\nAdd widget.txt.", forge.LabelBacklog)
	until("first merge", 8, func() bool { return e.getIssue(n1).State == forge.StateClosed })
	pr2 := e.pull(2)
	if !pr2.Merged || !strings.Contains(pr2.Title, "(#1)") {
		t.Fatalf("pull request #2: %+v", pr2)
	}
	if r := readVerdict(t, e, 2, pr2.HeadSHA); r.Verdict != verdict.Approve || !r.Formal {
		t.Fatalf("verdict on #2: %+v", r)
	}

	n3 := e.issue("Add a gizmo", "scenario: loop-3\n\nAdd gizmo.txt.", forge.LabelBacklog)
	until("second merge", 12, func() bool { return e.getIssue(n3).State == forge.StateClosed })
	pr4 := e.pull(4)
	if !pr4.Merged {
		t.Fatalf("pull request #4 not merged: %+v", pr4)
	}
	var rc string
	for _, c := range reviewerComments(t, e, 4) {
		if v, _, ok := verdict.ParseMarker(c.Body); ok && v == verdict.RequestChanges {
			rc = c.Body
		}
	}
	if !strings.Contains(rc, rcReason) {
		t.Fatalf("no change request on #4")
	}
	// The dev session was resumed with exactly the review's text.
	dev := e.model.MessageRequests("loop-3")
	var fed bool
	for _, r := range dev {
		if r.Turn == 2 && strings.Contains(r.Texts[len(r.Texts)-1], rc) {
			fed = true
		}
	}
	if !fed {
		t.Errorf("no resumed dev request carries the review text:\n%s", rc)
	}
	// The re-review resumed the review session with the incremental diff.
	revs := e.model.MessageRequests("loop-review-4")
	if len(revs) != 4 || revs[2].Turn != 2 || !strings.Contains(revs[2].Texts[len(revs[2].Texts)-1], "### Incremental Diff (") {
		t.Errorf("re-review requests: %d, turn %d", len(revs), revs[min(2, len(revs)-1)].Turn)
	}
	if last := revs[len(revs)-1].Texts; strings.Contains(last[len(last)-1], "+++ b/gizmo.txt") {
		t.Error("the re-review carried the full diff")
	}
}
