package e2e

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/verdict"
)

// writeReview is a model turn whose Bash tool call writes a review file
// to $DISINTO_REVIEW_FILE (the JSON must not contain single quotes).
func writeReview(json string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(`printf '%s' '` + json + `' > "$DISINTO_REVIEW_FILE" && echo review-written`))
}

// The real claude CLI reviews a pull request: the model's tool call writes
// the verdict file, the agent publishes it; after a push the re-review
// resumes the same conversation with only the incremental diff.
func TestReviewWithRealCLI(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{
		Name: "review-e2e",
		Turns: []claudetest.Turn{
			writeReview(`{"verdict":"REQUEST_CHANGES","verdict_reason":"quote the variable","review_markdown":"- **high** ` + "`lib/run.sh:1`" + `: unquoted $1","findings":[{"severity":"high","file":"lib/run.sh","line":1,"text":"unquoted $1"}]}`),
			claudetest.Text("Review written."),
			writeReview(`{"verdict":"APPROVE","verdict_reason":"fixed","review_markdown":"### Previous Findings\n- unquoted $1: FIXED"}`),
			claudetest.Text("Re-review written."),
		},
	})
	dir := e.ownerClone("")
	h1 := e.commitPush(dir, "quote", map[string]string{"lib/run.sh": "echo $1\n"})
	pr, err := e.repo.CreatePull(testCtx(t), forge.NewPull{Title: "Run script", Body: "scenario: review-e2e\n\nAdds lib/run.sh.", Head: "quote", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	e.ci(pr, forge.CISuccess, "green")
	rv := e.newReviewer(nil)

	rv.tick()
	comments := reviewerComments(t, e, pr.Number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "**REQUEST_CHANGES** — quote the variable") ||
		!strings.Contains(comments[0].Body, "<!-- reviewed: "+h1+" -->") {
		t.Fatalf("first review comments: %+v", comments)
	}
	r := readVerdict(t, e, pr.Number, h1)
	if r.Verdict != verdict.RequestChanges || !r.Formal {
		t.Fatalf("first verdict %+v", r)
	}
	first := e.model.MessageRequests("review-e2e")
	if len(first) != 2 || len(first[1].ToolResults) != 1 || !strings.Contains(first[1].ToolResults[0], "review-written") {
		t.Fatalf("first session: %d requests %+v", len(first), first)
	}
	if !strings.Contains(strings.Join(first[0].Texts, "\n"), "+++ b/lib/run.sh") {
		t.Error("first prompt lacks the diff")
	}

	h2 := e.commitPush(dir, "quote", map[string]string{"lib/run.sh": "echo \"$1\"\n"})
	e.ci(e.pull(pr.Number), forge.CISuccess, "green")
	rv.tick()
	r = readVerdict(t, e, pr.Number, h2)
	if r.Verdict != verdict.Approve || !r.Formal {
		t.Fatalf("re-review verdict %+v", r)
	}
	if !strings.HasPrefix(r.Feedback, "## AI Re-review (round 2)\n") {
		t.Errorf("re-review comment:\n%s", r.Feedback)
	}
	reqs := e.model.MessageRequests("review-e2e")
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	resumed := reqs[2]
	if resumed.Turn != 2 {
		t.Errorf("the re-review's first request saw %d earlier assistant turns, want 2 (a resumed session)", resumed.Turn)
	}
	texts := strings.Join(resumed.Texts, "\n")
	last := resumed.Texts[len(resumed.Texts)-1]
	switch {
	case !strings.Contains(texts, "+++ b/lib/run.sh") || !strings.Contains(texts, "scenario: review-e2e"):
		t.Error("the resumed request lacks the first review's prompt")
	case !strings.Contains(last, "## This is a RE-REVIEW") || !strings.Contains(last, "### Incremental Diff ("+h1[:7]+".."+h2[:7]+")"):
		t.Errorf("the new message is not the re-review:\n%s", last)
	case strings.Contains(last, "## Diff"):
		t.Errorf("the re-review message repeats the full diff:\n%s", last)
	}
	recs := rv.records()
	if len(recs) != 2 || recs[0].Reason != ledger.ReasonReviewed || recs[1].Code != "review.approve" ||
		recs[0].SessionID == "" || recs[1].SessionID != recs[0].SessionID || recs[1].CostUSD <= 0 || recs[1].InputTokens == 0 {
		t.Errorf("ledger: %+v", recs)
	}
}

func reviewerComments(t *testing.T, e *devEnv, n int64) []forge.Comment {
	t.Helper()
	cs, err := e.repo.ListComments(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	var out []forge.Comment
	for _, c := range cs {
		if c.Author == e.reviewer.Login {
			out = append(out, c)
		}
	}
	return out
}

func readVerdict(t *testing.T, e *devEnv, n int64, head string) verdict.Reading {
	t.Helper()
	cs, err := e.repo.ListComments(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := e.repo.ListReviews(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := verdict.Read(cs, rs, head, e.reviewer.Login)
	if !ok {
		t.Fatalf("no verdict at %s", head)
	}
	return r
}
