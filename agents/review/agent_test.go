package review_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/agents/review"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/verdict"
)

// Spec 20 §15 scenarios 1 and 2: first review approves, once per head.
func TestFirstReviewApproveOncePerHead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Fix the widget", "fix-widget")
	h.setModel(writes(output{Verdict: "approve", VerdictReason: "small fix", ReviewMarkdown: "### Summary\n- ok"}))

	h.tick()
	h.wantSessions(1)
	inv := h.runner.Calls()[0]
	for _, want := range []string{"## Diff", "lib/fix-widget.sh", "Re-review: false", "- CI: success", inv.Env["DISINTO_REVIEW_FILE"]} {
		if !strings.Contains(inv.Prompt, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if inv.ResumeID != "" || inv.Timeout != 900e9 {
		t.Errorf("resume %q timeout %v", inv.ResumeID, inv.Timeout)
	}
	cs := h.botComments(pr.Number, "<!-- reviewed: ")
	if len(cs) != 1 {
		t.Fatalf("%d review comments, want 1", len(cs))
	}
	lines := strings.Split(cs[0].Body, "\n")
	if lines[0] != "## AI Review" || lines[1] != "<!-- reviewed: "+pr.HeadSHA+" -->" || !strings.Contains(cs[0].Body, "**APPROVE** — small fix") {
		t.Errorf("comment:\n%s", cs[0].Body)
	}
	rs := h.botReviews(pr.Number)
	if len(rs) != 1 || rs[0].State != forge.ReviewApprove || rs[0].CommitID != pr.HeadSHA {
		t.Fatalf("formal reviews %+v", rs)
	}
	r, ok := verdict.Read(h.comments(pr.Number), h.reviews(pr.Number), pr.HeadSHA, h.bot.Login)
	if !ok || r.Verdict != verdict.Approve || !r.Formal {
		t.Errorf("author side reads %+v %t", r, ok)
	}
	recs := h.led.Records()
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonReviewed || recs[0].Code != "review.approve" ||
		recs[0].CostUSD != 0.12 || recs[0].InputTokens != 1000 || recs[0].SessionID != "sess-0" || recs[0].PR != pr.Number {
		t.Errorf("ledger %+v", recs)
	}

	for range 3 {
		h.tick()
	}
	h.wantSessions(1)
	if n := len(h.comments(pr.Number)); n != 1 {
		t.Errorf("%d comments after idle ticks", n)
	}
	if n := len(h.reviews(pr.Number)); n != 1 {
		t.Errorf("%d reviews after idle ticks", n)
	}
	// Approved: the worktree is gone.
	if _, err := os.Stat(inv.Dir); !os.IsNotExist(err) {
		t.Errorf("worktree %s kept after approval: %v", inv.Dir, err)
	}

	// A restarted daemon with a lost data dir does not review again.
	if err := os.RemoveAll(filepath.Join(h.data, "state")); err != nil {
		t.Fatal(err)
	}
	h.a = h.newAgent()
	h.tick()
	h.wantSessions(1)
}

// Scenarios 3 and 4 (and issue scenario 2): request changes, then a push;
// the re-review resumes the session in the same directory with only the
// incremental diff and the previous findings; approval dismisses the bot's
// own change request but not a human's (scenario 5).
func TestReReviewResumesWithIncrementalDiff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Fix the gadget", "fix-gadget")
	h1 := pr.HeadSHA
	h.setModel(writes(output{Verdict: "REQUEST_CHANGES", VerdictReason: "nil check", ReviewMarkdown: "- **high** `lib/fix-gadget.sh:1`: missing quote"}))
	h.tick()
	h.wantSessions(1)
	first := h.runner.Calls()[0]

	// Only repository admins may dismiss reviews on Gitea; the provisioned
	// bot has write access, with which the approval still supersedes (see
	// the end-to-end test). Here it is an admin, to check what it dismisses.
	if err := h.repo.AddCollaborator(ctx(t), h.bot.Login, forge.PermAdmin); err != nil {
		t.Fatal(err)
	}
	human := h.srv.NewUser(t, "human")
	if err := h.repo.AddCollaborator(ctx(t), human.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := human.Client.Repo(h.repo.Owner(), h.repo.Name()).CreateReview(ctx(t), pr.Number,
		forge.NewReview{Event: forge.ReviewRequestChanges, Body: "Human says no.", CommitID: h1}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.repo.CreateComment(ctx(t), pr.Number, "Quoted it now, thanks."); err != nil {
		t.Fatal(err)
	}

	h2 := h.push("fix-gadget", map[string]string{"lib/second.sh": "echo \"$x\"\n"})
	h.ci(h2, forge.CISuccess)
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "fixed", ReviewMarkdown: "### Previous Findings\n- quote FIXED"}))
	h.tick()
	h.wantSessions(2)
	re := h.runner.Calls()[1]
	if re.ResumeID != "sess-0" || re.Dir != first.Dir {
		t.Errorf("re-review resume %q in %s, want sess-0 in %s", re.ResumeID, re.Dir, first.Dir)
	}
	for _, want := range []string{"## This is a RE-REVIEW", "### Incremental Diff (" + h1[:7] + ".." + h2[:7] + ")",
		"+++ b/lib/second.sh", "missing quote", "Quoted it now, thanks."} {
		if !strings.Contains(re.Prompt, want) {
			t.Errorf("re-review prompt lacks %q:\n%s", want, re.Prompt)
		}
	}
	// Only the incremental diff: the first commit's file is not in it.
	if strings.Contains(re.Prompt, "+++ b/lib/fix-gadget.sh") {
		t.Errorf("re-review prompt holds the full diff:\n%s", re.Prompt)
	}
	cs := h.botComments(pr.Number, "<!-- reviewed: "+h2)
	if len(cs) != 1 || !strings.HasPrefix(cs[0].Body, "## AI Re-review (round 2)\n") || !strings.Contains(cs[0].Body, "Previous: `"+h1[:7]+"`") {
		t.Fatalf("re-review comment %+v", cs)
	}
	var botRC, humanRC, approved int
	for _, r := range h.reviews(pr.Number) {
		switch {
		case r.Author == h.bot.Login && r.State == forge.ReviewRequestChanges:
			botRC++
			if !r.Dismissed {
				t.Errorf("bot's change request %d not dismissed", r.ID)
			}
		case r.Author == human.Login:
			humanRC++
			if r.Dismissed {
				t.Error("the human's review was dismissed")
			}
		case r.Author == h.bot.Login && r.State == forge.ReviewApprove && r.CommitID == h2:
			approved++
		}
	}
	if botRC != 1 || humanRC != 1 || approved != 1 {
		t.Errorf("reviews: bot RC %d, human %d, approvals at h2 %d", botRC, humanRC, approved)
	}
}

// Scenario 6: DISCUSS is shown as such and published as REQUEST_CHANGES.
// Issue scenario 4: prose quoting another verdict does not change it.
func TestDiscussAndQuotedVerdicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	discuss := h.openGreenPR("Rework the cache", "cache")
	quoted := h.openGreenPR("Small fix", "small")
	h.setModel(func(n int, inv claude.Invocation) (claude.Result, error) {
		if strings.Contains(inv.Prompt, "Rework the cache") {
			return writes(output{Verdict: "discuss", VerdictReason: "which design?"})(n, inv)
		}
		return writes(output{Verdict: "APPROVE", VerdictReason: "fine",
			ReviewMarkdown: "The old review said **REQUEST_CHANGES**; resolved.\n<!-- disinto:verdict value=REQUEST_CHANGES sha=" + quoted.HeadSHA + " -->"})(n, inv)
	})
	h.tick()
	h.wantSessions(2)
	if cs := h.botComments(discuss.Number, "**DISCUSS** — which design?"); len(cs) != 1 {
		t.Errorf("discuss comment missing")
	}
	rs := h.botReviews(discuss.Number)
	if len(rs) != 1 || rs[0].State != forge.ReviewRequestChanges {
		t.Errorf("discuss reviews %+v", rs)
	}
	r, ok := verdict.Read(h.comments(quoted.Number), h.reviews(quoted.Number), quoted.HeadSHA, h.bot.Login)
	if !ok || r.Verdict != verdict.Approve {
		t.Errorf("quoted review read as %+v", r)
	}
}

// Scenarios 7 and 8 (issue scenario 3): invalid output is an error
// comment, never a verdict; three errors hold the breaker until a push.
func TestInvalidOutputAndCircuitBreaker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Broken model", "broken")
	outputs := []string{`{"verdict": "LGTM"}`, `this is not json`, ``}
	h.setModel(func(n int, inv claude.Invocation) (claude.Result, error) {
		if n < len(outputs) && outputs[n] != "" {
			return writes(outputs[n])(n, inv)
		}
		return okResult("sess"), nil // writes nothing
	})
	for range 4 {
		h.tick()
	}
	h.wantSessions(3)
	errs := h.botComments(pr.Number, "<!-- review-error: "+pr.HeadSHA+" -->")
	if len(errs) != 3 {
		t.Fatalf("%d error comments, want 3", len(errs))
	}
	if len(h.botComments(pr.Number, "<!-- reviewed:")) != 0 || len(h.reviews(pr.Number)) != 0 {
		t.Error("a failed review published a verdict")
	}
	codes := map[ledger.Code]int{}
	for _, r := range h.led.Records() {
		codes[r.Code]++
	}
	if codes["review.invalid_output"] != 2 || codes["review.no_output"] != 1 {
		t.Errorf("ledger codes %v", codes)
	}
	// The breaker survives a restart with a lost data dir (it is on the forge).
	if err := os.RemoveAll(filepath.Join(h.data, "state")); err != nil {
		t.Fatal(err)
	}
	h.a = h.newAgent()
	h.tick()
	h.wantSessions(3)

	h2 := h.push("broken", map[string]string{"lib/more.sh": "echo more\n"})
	h.ci(h2, forge.CISuccess)
	h.setModel(writes("Here is my review.\n\n```json\n{\"verdict\": \"APPROVE\", \"verdict_reason\": \"fenced\"}\n```\n"))
	h.tick()
	h.wantSessions(4)
	// Scenario 9: a fenced JSON block in prose counts.
	if cs := h.botComments(pr.Number, "**APPROVE** — fenced"); len(cs) != 1 {
		t.Error("fenced output not published")
	}
}

// Scenario 10 and the per-tick cap (scenario 12) and exclusions (11).
func TestSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "ok"}))
	// Not reviewed: WIP titles (Gitea's drafts), another base, pending CI on code.
	gitT(t, h.seed, "push", "--quiet", "origin", "origin/main:refs/heads/release")
	wip1 := h.openGreenPR("WIP: x", "wip1")
	wip2 := h.openGreenPR("[WIP] y", "wip2")
	rel := h.openPR("To release", "rel", "release", map[string]string{"lib/rel.sh": "x\n"})
	h.ci(rel.HeadSHA, forge.CISuccess)
	pending := h.openPR("Code, CI pending", "pending", "main", map[string]string{"lib/x.sh": "x\n"})
	h.ci(pending.HeadSHA, forge.CIPending)
	nostatus := h.openPR("Code, no CI yet", "nostatus", "main", map[string]string{"src/y.go": "package y\n"})
	// Reviewed although CI is pending: documentation only.
	docs := h.openPR("Docs only", "docs", "main", map[string]string{"docs/a.md": "a\n", "README.md": "hi\n"})
	h.ci(docs.HeadSHA, forge.CIPending)
	var green []forge.PullRequest
	for i := range 4 {
		green = append(green, h.openGreenPR("Green "+string(rune('a'+i)), "green"+string(rune('a'+i))))
	}

	h.tick()
	h.wantSessions(3) // the cap
	h.tick()
	h.wantSessions(5)
	h.tick()
	h.wantSessions(5)
	reviewed := map[int64]bool{}
	for _, inv := range h.runner.Calls() {
		for _, p := range append(green, docs, wip1, wip2, rel, pending, nostatus) {
			if strings.Contains(inv.Prompt, "- Pull request: #"+itoa(p.Number)+"\n") {
				reviewed[p.Number] = true
				if p.Number == docs.Number && !strings.Contains(inv.Prompt, "(not required — non-code PR)") {
					t.Error("docs prompt lacks the CI note")
				}
			}
		}
	}
	for _, p := range []forge.PullRequest{wip1, wip2, rel, pending, nostatus} {
		if reviewed[p.Number] {
			t.Errorf("%q was reviewed", p.Title)
		}
	}
	for _, p := range append(green, docs) {
		if !reviewed[p.Number] {
			t.Errorf("%q was not reviewed", p.Title)
		}
	}
	// CI turns green: now it is reviewed.
	h.ci(pending.HeadSHA, forge.CISuccess)
	h.tick()
	h.wantSessions(6)
}

// Scenario 14: a verdict whose formal review failed is completed on the
// next tick without the model; also after the state was lost.
func TestHalfPublishedRepair(t *testing.T) {
	t.Parallel()
	var flaky *flakyReviews
	h := newHarness(t, func(h *harness, o *review.Options) {
		flaky = &flakyReviews{RepoClient: o.Forge.(*forge.RepoClient)}
		o.Forge = flaky
	})
	flaky.fail.Store(1)
	pr := h.openGreenPR("Half", "half")
	h.setModel(writes(output{Verdict: "REQUEST_CHANGES", VerdictReason: "bug"}))
	h.tick()
	h.wantSessions(1)
	if n := len(h.botReviews(pr.Number)); n != 0 {
		t.Fatalf("%d formal reviews while the forge failed", n)
	}
	h.tick()
	h.wantSessions(1)
	cs := h.botComments(pr.Number, "<!-- reviewed: "+pr.HeadSHA)
	rs := h.botReviews(pr.Number)
	if len(cs) != 1 || len(rs) != 1 || rs[0].State != forge.ReviewRequestChanges || rs[0].CommitID != pr.HeadSHA {
		t.Fatalf("after repair: %d comments, reviews %+v", len(cs), rs)
	}

	// Lost state and a missing formal review: rebuilt from the marker.
	pr2 := h.openGreenPR("Half again", "half2")
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "ok"}))
	// Post the comment as the agent would, but no formal review.
	body := "## AI Review\n<!-- reviewed: " + pr2.HeadSHA + " -->\n" + verdict.Marker(verdict.Approve, pr2.HeadSHA) + "\n\n### Verdict\n**APPROVE** — ok\n"
	if _, err := h.asBotRepo().CreateComment(ctx(t), pr2.Number, body); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.wantSessions(1)
	rs = h.botReviews(pr2.Number)
	if len(rs) != 1 || rs[0].State != forge.ReviewApprove || rs[0].CommitID != pr2.HeadSHA {
		t.Fatalf("repair from the marker: reviews %+v", rs)
	}
}

// Scenario 17 (issue scenario 5): a pre-existing finding becomes one
// tech-debt issue, even when two reviews report it.
func TestTechDebtFiledOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	finding := map[string]any{"severity": "medium", "file": "lib/x.sh", "line": 3, "text": "Unquoted var in lib/x.sh", "preexisting": true}
	minor := map[string]any{"severity": "low", "file": "lib/y.sh", "line": 1, "text": "Style nit", "preexisting": true}
	introduced := map[string]any{"severity": "high", "file": "lib/z.sh", "line": 1, "text": "New bug", "preexisting": false}
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "ok", Findings: []map[string]any{finding, minor, introduced}}))
	a := h.openGreenPR("First", "first")
	h.tick()
	finding["text"] = "Unquoted  var in LIB/x.sh " // same finding, other spacing
	b := h.openGreenPR("Second", "second")
	h.tick()
	h.wantSessions(2)
	issues, err := h.repo.ListIssues(ctx(t), forge.IssueQuery{State: forge.StateAll, Labels: []forge.LabelName{forge.LabelTechDebt}})
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 {
		t.Fatalf("%d tech-debt issues, want 1: %+v", len(issues), issues)
	}
	is := issues[0]
	if is.Author != h.bot.Login || !strings.Contains(is.Body, "#"+itoa(a.Number)) || !strings.Contains(is.Title, "Unquoted var") {
		t.Errorf("issue %+v", is)
	}
	_ = b
}

// Scenario 18: a merged pull request's worktree and state are removed.
func TestClosedPullRequestCleanup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Needs work", "work")
	h.setModel(writes(output{Verdict: "REQUEST_CHANGES", VerdictReason: "bug"}))
	h.tick()
	dir := h.runner.Calls()[0].Dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("worktree kept for a re-review: %v", err)
	}
	if err := h.repo.Merge(ctx(t), pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree survived the merge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.data, "state", "pr-"+itoa(pr.Number)+".json")); !os.IsNotExist(err) {
		t.Errorf("state survived the merge: %v", err)
	}
}

func (h *harness) asBotRepo() *forge.RepoClient {
	return h.bot.Client.Repo(h.repo.Owner(), h.repo.Name())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// flakyReviews fails the next formal reviews, as a forge outage between
// the comment and the formal review would.
type flakyReviews struct {
	*forge.RepoClient
	fail atomic.Int32
}

func (f *flakyReviews) CreateReview(ctx context.Context, n int64, in forge.NewReview) (forge.Review, error) {
	if f.fail.Add(-1) >= 0 {
		return forge.Review{}, &forge.StatusError{Status: 502}
	}
	return f.RepoClient.CreateReview(ctx, n, in)
}

// Two daemons acting as the same review bot (or one that lost its data
// dir): a head reviewed by one is not reviewed again by the other, also
// when the other had synced an earlier head.
func TestSecondDaemonDoesNotReviewAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Shared", "shared")
	h.setModel(writes(output{Verdict: "REQUEST_CHANGES", VerdictReason: "bug"}))
	first := h.a
	dataA := h.data
	h.data = t.TempDir()
	second := h.newAgent()
	h.data = dataA

	h.tick()
	h.wantSessions(1)
	h.a = second
	h.tick()
	h.wantSessions(1)

	h2 := h.push("shared", map[string]string{"lib/fix.sh": "fixed\n"})
	h.ci(h2, forge.CISuccess)
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "ok"}))
	h.a = first
	h.tick()
	h.wantSessions(2)
	h.a = second
	h.tick()
	h.wantSessions(2)
	if n := len(h.botComments(pr.Number, "<!-- reviewed: ")); n != 2 {
		t.Errorf("%d review comments, want 2", n)
	}
}

// TestSpentBudgetWaits: a spent budget holds a review without a strike
// against the head, says so once on the pull request, and the review is
// made once the budget lifts.
func TestSpentBudgetWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr := h.openGreenPR("Budgeted", "budgeted")
	spent := true
	approve := writes(`{"verdict": "APPROVE", "verdict_reason": "fine"}`)
	h.setModel(func(n int, inv claude.Invocation) (claude.Result, error) {
		if spent {
			return okResult("sess"), fmt.Errorf("%w: the day budget of review on p (300 tokens) is spent: 320 used", claude.ErrBudgetExhausted)
		}
		return approve(n, inv)
	})
	for range 3 {
		h.tick()
	}
	if got := h.botComments(pr.Number, "waits: the day budget of review on p (300 tokens)"); len(got) != 1 {
		t.Fatalf("%d comments about the budget, want 1: %+v", len(got), h.comments(pr.Number))
	}
	if errs := h.botComments(pr.Number, "<!-- review-error:"); len(errs) != 0 {
		t.Fatalf("a spent budget counted against the head: %d error comments", len(errs))
	}
	codes := map[ledger.Code]int{}
	for _, r := range h.led.Records() {
		codes[r.Code]++
	}
	if codes[ledger.CodeBudgetExhausted] != 3 {
		t.Errorf("ledger codes %v", codes)
	}
	spent = false
	h.tick()
	if cs := h.botComments(pr.Number, "**APPROVE** — fine"); len(cs) != 1 {
		t.Error("no review once the budget lifted")
	}
}
