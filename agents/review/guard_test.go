package review_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

const (
	parseTest = "package parse\n\nimport \"testing\"\n\n" +
		"func TestParse(t *testing.T) {\n\tif Parse(\"1\") != 1 {\n\t\tt.Fatal(\"Parse(1) is not 1\")\n\t}\n}\n\n" +
		"func TestEmpty(t *testing.T) {\n\tif Parse(\"\") != 0 {\n\t\tt.Fatal(\"Parse of nothing is not 0\")\n\t}\n}\n"
	// parseTestGone is parseTest without TestParse, the test that failed.
	parseTestGone = "package parse\n\nimport \"testing\"\n\n" +
		"func TestEmpty(t *testing.T) {\n\tif Parse(\"\") != 0 {\n\t\tt.Fatal(\"Parse of nothing is not 0\")\n\t}\n}\n"
)

// The test-integrity guard on the real forge: a pull request that deletes
// the failing test its issue asked to fix is reviewed REQUEST_CHANGES
// naming the test, though the model approved; the model was told. Once
// the test is back the model's approval stands. A pull request whose
// issue asks for the test's removal is approved.
func TestGuardRequestsChangesForADeletedTest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.push("main", map[string]string{"parse/parse.go": "package parse\n\nfunc Parse(s string) int { return 0 }\n", "parse/parse_test.go": parseTest})
	fix, err := h.repo.CreateIssue(ctx(t), forge.NewIssue{Title: "Parse returns 0 for everything", Body: "TestParse fails: Parse(\"1\") should be 1. Fix Parse."})
	if err != nil {
		t.Fatal(err)
	}
	h.push("fix-parse", map[string]string{"parse/parse_test.go": parseTestGone})
	pr, err := h.repo.CreatePull(ctx(t), forge.NewPull{Title: "Fix Parse", Body: fmt.Sprintf("Fixes #%d", fix.Number), Head: "fix-parse", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h.ci(pr.HeadSHA, forge.CISuccess)
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "CI is green", ReviewMarkdown: "Looks good."}))

	h.tick()
	h.wantSessions(1)
	if p := h.runner.Calls()[0].Prompt; !strings.Contains(p, "test-integrity check found") || !strings.Contains(p, "`TestParse`") {
		t.Errorf("the prompt does not tell the model what the guard found:\n%s", p)
	}
	rs := h.botReviews(pr.Number)
	if len(rs) != 1 || rs[0].State != forge.ReviewRequestChanges || rs[0].CommitID != pr.HeadSHA {
		t.Fatalf("formal reviews %+v, want one change request at the head", rs)
	}
	r, ok := verdict.Read(h.comments(pr.Number), h.reviews(pr.Number), pr.HeadSHA, h.bot.Login)
	if !ok || r.Verdict != verdict.RequestChanges || !r.Formal {
		t.Fatalf("author side reads %+v %t", r, ok)
	}
	for _, want := range []string{"### Test integrity", "test `TestParse` deleted or renamed (was at `parse/parse_test.go:5`)", "Looks good."} {
		if !strings.Contains(r.Feedback, want) {
			t.Errorf("review comment lacks %q:\n%s", want, r.Feedback)
		}
	}
	if strings.Contains(r.Feedback, "TestEmpty") {
		t.Errorf("the review names a test that was kept:\n%s", r.Feedback)
	}

	// The test comes back: the guard is satisfied, the model's verdict
	// stands.
	head := h.push("fix-parse", map[string]string{"parse/parse_test.go": parseTest, "parse/parse.go": "package parse\n\nimport \"strconv\"\n\nfunc Parse(s string) int { n, _ := strconv.Atoi(s); return n }\n"})
	h.ci(head, forge.CISuccess)
	h.tick()
	h.wantSessions(2)
	if r, ok := verdict.Read(h.comments(pr.Number), h.reviews(pr.Number), head, h.bot.Login); !ok || r.Verdict != verdict.Approve || strings.Contains(r.Feedback, "Test integrity") {
		t.Fatalf("after the test came back: %+v %t", r, ok)
	}

	// An issue that asks for the test's removal excuses it.
	drop, err := h.repo.CreateIssue(ctx(t), forge.NewIssue{Title: "Retire the old parser tests", Body: "Remove TestParse: it pins the old behaviour."})
	if err != nil {
		t.Fatal(err)
	}
	h.push("drop-test", map[string]string{"parse/parse_test.go": parseTestGone})
	pr2, err := h.repo.CreatePull(ctx(t), forge.NewPull{Title: "Retire TestParse", Body: fmt.Sprintf("Closes #%d", drop.Number), Head: "drop-test", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h.ci(pr2.HeadSHA, forge.CISuccess)
	h.tick()
	h.wantSessions(3)
	if strings.Contains(h.runner.Calls()[2].Prompt, "test-integrity check found") {
		t.Error("the prompt reports an excused finding")
	}
	if r, ok := verdict.Read(h.comments(pr2.Number), h.reviews(pr2.Number), pr2.HeadSHA, h.bot.Login); !ok || r.Verdict != verdict.Approve {
		t.Fatalf("a removal the issue asks for: %+v %t", r, ok)
	}
}
