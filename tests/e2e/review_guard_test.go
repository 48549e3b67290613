package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

const (
	guardParse     = "package parse\n\nfunc Parse(s string) int { return 0 }\n"
	guardParseFix  = "package parse\n\nimport \"strconv\"\n\nfunc Parse(s string) int {\n\tn, _ := strconv.Atoi(s)\n\treturn n\n}\n"
	guardTests     = "package parse\n\nimport \"testing\"\n\nfunc TestParse(t *testing.T) {\n\tif Parse(\"1\") != 1 {\n\t\tt.Fatal(\"Parse(1) is not 1\")\n\t}\n}\n\nfunc TestEmpty(t *testing.T) {\n\tif Parse(\"\") != 0 {\n\t\tt.Fatal(\"Parse of nothing is not 0\")\n\t}\n}\n"
	guardTestsGone = "package parse\n\nimport \"testing\"\n\nfunc TestEmpty(t *testing.T) {\n\tif Parse(\"\") != 0 {\n\t\tt.Fatal(\"Parse of nothing is not 0\")\n\t}\n}\n"
)

// writeFiles is a dev session's turn that writes files (contents without
// '$'), commits them and waits for CI.
func writeFiles(files map[string]string) claudetest.Turn {
	var b strings.Builder
	for name, content := range files {
		fmt.Fprintf(&b, "printf '%%b' %q > %s && ", content, name)
	}
	b.WriteString(`git commit -q -am "fix: parse (#$DISINTO_ISSUE)" && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`)
	return claudetest.Tools(claudetest.Bash(b.String()))
}

// The test-integrity guard end to end: the dev session makes the failing
// test pass by deleting it; CI is green and the review model approves,
// but the review bot requests changes naming the deleted test, and the
// pull request is not merged. The dev session is resumed with that
// review, restores the test and fixes the code; only then is the pull
// request approved and merged.
func TestGuardStopsADeletedTest(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t,
		claudetest.Scenario{Name: "guard-review-2", Marker: "Review pull request #2 of proj", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"APPROVE","verdict_reason":"CI is green"}`),
			claudetest.Text("Approved."),
			writeReview(`{"verdict":"APPROVE","verdict_reason":"Parse is fixed"}`),
			claudetest.Text("Approved."),
		}},
		claudetest.Scenario{Name: "guard-1", Turns: []claudetest.Turn{
			writeFiles(map[string]string{"parse/parse_test.go": guardTestsGone}),
			claudetest.Text("TestParse no longer fails."),
			writeFiles(map[string]string{"parse/parse_test.go": guardTests, "parse/parse.go": guardParseFix}),
			claudetest.Text("Restored TestParse and fixed Parse."),
		}},
	)
	e.commitPush(e.ownerClone(""), "main", map[string]string{"parse/parse.go": guardParse, "parse/parse_test.go": guardTests})
	b := e.newBot("dev-bot")
	rv := e.newReviewer(b.rt)

	// daemonPass ticks review then dev, and plays CI: every open pull
	// request's new head turns green (the deleted test no longer fails).
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
		repeatUntil(t, what, max, daemonPass, cond)
	}

	n := e.issue("Parse returns 0 for everything", "scenario: guard-1\n\nTestParse fails: Parse(\"1\") must be 1. Fix Parse.", forge.LabelBacklog)
	var deletedAt string
	until("a change request", 8, func() bool {
		for _, c := range reviewerComments(t, e, 2) {
			if v, sha, ok := verdict.ParseMarker(c.Body); ok && v == verdict.RequestChanges {
				deletedAt = sha
				return true
			}
		}
		return false
	})
	r := readVerdict(t, e, 2, deletedAt)
	if r.Verdict != verdict.RequestChanges || !r.Formal {
		t.Fatalf("verdict on the head that deletes the test: %+v", r)
	}
	if !strings.Contains(r.Feedback, "test `TestParse` deleted or renamed") || strings.Contains(r.Feedback, "TestEmpty") {
		t.Fatalf("the change request does not name the deleted test alone:\n%s", r.Feedback)
	}
	if p := e.pull(2); p.Merged {
		t.Fatal("the pull request that deletes the failing test was merged")
	}
	revs := e.model.MessageRequests("guard-review-2")
	if len(revs) == 0 || !strings.Contains(revs[0].Texts[len(revs[0].Texts)-1], "test-integrity check found") {
		t.Error("the review model was not told what the guard found")
	}

	until("the merge", 12, func() bool { return e.getIssue(n).State == forge.StateClosed })
	p := e.pull(2)
	if !p.Merged || p.HeadSHA == deletedAt {
		t.Fatalf("pull request #2: merged %t at %s, the deleting head was %s", p.Merged, p.HeadSHA, deletedAt)
	}
	if r := readVerdict(t, e, 2, p.HeadSHA); r.Verdict != verdict.Approve || strings.Contains(r.Feedback, "Test integrity") {
		t.Errorf("verdict on the merged head: %+v", r)
	}
	// The dev session was resumed with the review that names the test.
	var fed bool
	for _, req := range e.model.MessageRequests("guard-1") {
		if req.Turn == 2 && strings.Contains(req.Texts[len(req.Texts)-1], "test `TestParse` deleted or renamed") {
			fed = true
		}
	}
	if !fed {
		t.Error("no resumed dev request names the deleted test")
	}
}
