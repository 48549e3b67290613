package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestSystemVisionToMergedSprint is the whole road of a vision, through
// the built daemon on a project `disinto init` provisioned, with the
// scripted model playing every role: the architect pitches the vision
// issue as a sprint pull request on the ops repository; the human admin
// comments ACCEPT; the architect's design round, resuming the pitch's
// conversation, says the sprint is ready; the admin approves and merges
// it; the filer files its two sub-issues, the second depending on the
// first; the dev agent implements them in dependency order (the second
// is labelled priority, so only the dependency gate holds it back) as
// pull requests the review agent approves and the dev agent merges; and
// the filer closes the vision with its completion comment. No
// credential reaches the data dir or the daemon's output.
func TestSystemVisionToMergedSprint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	start := time.Now()
	t.Cleanup(func() { t.Logf("TestSystemVisionToMergedSprint took %s", time.Since(start).Round(time.Second)) })

	// The architect (and the filer, on its cadence) runs every few seconds
	// once its slot has come; dev and review are woken by webhooks.
	y := bootSystemEnv(t, 30*time.Second, []string{"AGENT_ROLES=dev,review,architect", "ARCHITECT_INTERVAL=5"})
	ctx := testCtx(t)
	admin := y.srv.Admin(t)
	proj, ops := admin.Repo("acme", "widgets"), admin.Repo("acme", "widgets-ops")
	w := &sysWatch{t: t, ctx: ctx, admin: proj, died: y.died}

	vision, err := proj.CreateIssue(ctx, forge.NewIssue{Title: "Add billing", Body: "Customers pay monthly.",
		Labels: []forge.LabelName{forge.LabelVision}})
	if err != nil {
		t.Fatal(err)
	}
	if err := y.model.SetScenarios(sprintScenarios(vision.Number)...); err != nil {
		t.Fatal(err)
	}

	// The pitch: a sprint pull request by architect-bot, its file on the
	// branch, the footer telling the humans how to decide.
	archBot := config.DefaultBotUser(config.RoleArchitect)
	var pr forge.PullRequest
	rig.Await(t, "the architect's sprint pull request and its footer", 4*time.Minute, y.died, func() bool {
		p, ok := sprintPull(t, ops, vision.Number)
		if !ok {
			return false
		}
		pr = p
		return commentBy(t, ops, p.Number, archBot, func(body string) bool { return body == architect.Footer })
	})
	if pr.Author != archBot || pr.State != forge.StateOpen || pr.Title != "architect: Add billing" {
		t.Fatalf("sprint pull request: %+v", pr)
	}
	if f, err := ops.GetFile(ctx, "sprints/add-billing.md", pr.Head); err != nil || !strings.Contains(string(f.Content), "<!-- filer:begin -->") {
		t.Fatalf("sprint file on %s: %v\n%s", pr.Head, err, f.Content)
	}
	t.Logf("vision #%d pitched as ops pull request #%d after %s", vision.Number, pr.Number, time.Since(start).Round(time.Second))

	// The admin accepts; the design round resumes the pitch's
	// conversation and finds nothing left open.
	if _, err := ops.CreateComment(ctx, pr.Number, "ACCEPT"); err != nil {
		t.Fatal(err)
	}
	rig.Await(t, "the architect's design round saying ready", 3*time.Minute, y.died, func() bool {
		return commentBy(t, ops, pr.Number, archBot, func(body string) bool {
			m, ok := forge.FindMarker(body, forge.MarkerSprintReply)
			return ok && m.Fields["ready"] == "true"
		})
	})
	if !commentBy(t, ops, pr.Number, archBot, func(body string) bool { return strings.Contains(body, "Accepted by @"+y.srv.AdminLogin) }) {
		t.Errorf("the architect did not acknowledge the admin's ACCEPT on #%d", pr.Number)
	}
	if qs := y.model.MessageRequests("sprint-questions"); len(qs) == 0 || qs[0].Turn != 2 {
		t.Errorf("the design round did not resume the pitch's conversation: %d requests", len(qs))
	}

	// The admin sees the merge check green, approves and merges.
	rig.Await(t, "the sprint's merge check", time.Minute, y.died, func() bool {
		p, err := ops.GetPull(ctx, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		pr = p
		cs, err := ops.CombinedStatus(ctx, p.HeadSHA)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cs.Statuses {
			if s.Context == architect.StatusContext && s.State == forge.CISuccess {
				return true
			}
		}
		return false
	})
	adminApproveAndMerge(t, ops, pr, "Go.")

	// The filer files the two sub-issues, the API depending on the schema.
	var schema, api forge.Issue
	rig.Await(t, "the filer's sub-issues", 2*time.Minute, y.died, func() bool {
		subs := filedSubIssues(t, proj, vision.Number)
		schema, api = subs["billing schema"], subs["billing API"]
		return len(subs) == 2 && schema.Number != 0 && api.Number != 0
	})
	if !strings.Contains(api.Body, fmt.Sprintf("## Depends on\n- #%d\n", schema.Number)) || !api.HasLabel(forge.LabelPriority) {
		t.Fatalf("the API sub-issue does not depend on the schema's #%d or is not priority: %v\n%s", schema.Number, api.Labels, api.Body)
	}
	t.Logf("sprint merged; sub-issues #%d and #%d filed after %s", schema.Number, api.Number, time.Since(start).Round(time.Second))

	// The dev agent works both to merged pull requests, each approved by
	// the review agent, the dependency first.
	schemaPR := w.mergedPull(schema.Number)
	apiPR := w.mergedPull(api.Number)
	t.Logf("pull requests #%d and #%d merged after %s", schemaPR.Number, apiPR.Number, time.Since(start).Round(time.Second))
	for _, p := range []forge.PullRequest{schemaPR, apiPR} {
		if rs := w.botReviews(p.Number); len(rs) != 1 || rs[0].State != forge.ReviewApprove || rs[0].CommitID != p.HeadSHA {
			t.Errorf("review-bot's reviews of #%d (head %s): %+v", p.Number, p.HeadSHA, rs)
		}
	}
	// The dev agent records a run after its last forge call.
	var merged []int64
	rig.Await(t, "the dev agent's merges in the ledger", time.Minute, y.died, func() bool {
		merged = nil
		for _, r := range ledgerRecords(t, y.Data) {
			if r.Role == string(config.RoleDev) && r.Reason == ledger.ReasonMerged {
				merged = append(merged, r.Issue)
			}
		}
		return len(merged) >= 2
	})
	if fmt.Sprint(merged) != fmt.Sprint([]int64{schema.Number, api.Number}) {
		t.Errorf("the dev agent merged issues %v, want the schema's #%d before the API's #%d", merged, schema.Number, api.Number)
	}
	// The API's work started from a main that had the schema merged.
	check := t.TempDir()
	runGit(t, "", "clone", "-q", strings.Replace(y.srv.URL, "://", "://"+y.srv.AdminLogin+":"+y.srv.AdminPassword+"@", 1)+"/acme/widgets.git", check)
	runGit(t, check, "fetch", "-q", "origin", fmt.Sprintf("refs/pull/%d/head", apiPR.Number))
	if err := exec.Command("git", "-C", check, "merge-base", "--is-ancestor", schemaPR.MergedSHA, apiPR.HeadSHA).Run(); err != nil {
		t.Errorf("the API's head %s does not build on the schema's merge %s: %v", apiPR.HeadSHA, schemaPR.MergedSHA, err)
	}

	// Every sub-issue closed: the filer, on its next pass, closes the
	// vision.
	rig.Await(t, "the vision closed", 2*time.Minute, y.died, func() bool {
		v, err := proj.GetIssue(ctx, vision.Number)
		if err != nil {
			t.Fatal(err)
		}
		return v.State == forge.StateClosed
	})
	if v, err := proj.GetIssue(ctx, vision.Number); err != nil || v.HasLabel(forge.LabelInProgress) {
		t.Errorf("the closed vision: %+v %v", v, err)
	}
	filerBot := config.DefaultBotUser(config.RoleFiler)
	if !commentBy(t, proj, vision.Number, filerBot, func(body string) bool {
		return strings.HasPrefix(body, forge.VisionCompletedHeading) &&
			strings.Contains(body, fmt.Sprintf("- #%d ", schema.Number)) && strings.Contains(body, fmt.Sprintf("- #%d ", api.Number))
	}) {
		t.Errorf("no completion comment of %s naming #%d and #%d on the vision", filerBot, schema.Number, api.Number)
	}

	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v", err)
	}
	out := y.d.Out.String()
	for name, v := range y.secrets {
		if strings.Contains(out, v) {
			t.Errorf("the daemon's output holds %s", name)
		}
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
	if t.Failed() {
		t.Logf("daemon output:\n%s", out)
	}
}

// sprintScenarios script every session of the sprint of vision n, most
// specific marker first: a resumed design round also holds the pitch's
// prompt, and the architect's prompts show the sprint file, which names
// the dev scenarios; a review prompt shows the issue it fixes.
func sprintScenarios(n int64) []claudetest.Scenario {
	outbox := func(doc, reply string) string {
		var b strings.Builder
		if doc != "" {
			b.WriteString("cat > \"$" + architect.EnvSprint + "\" <<'SPRINT'\n" + doc + "SPRINT\n")
		}
		b.WriteString("cat > \"$" + architect.EnvReply + "\" <<'REPLY'\n" + reply + "\nREPLY\n")
		return b.String()
	}
	return []claudetest.Scenario{
		// The design round continues the pitch's two-turn conversation.
		{Name: "sprint-questions", Marker: fmt.Sprintf("Mode %q on sprint pull request #", architect.ModeQuestions), Turns: []claudetest.Turn{
			claudetest.Text("this conversation was expected to be resumed"), claudetest.Text("this conversation was expected to be resumed"),
			claudetest.Tools(claudetest.Bash(outbox("", `{"comments": ["No design forks are left open: ready to merge."], "ready": true}`))),
			claudetest.Text("Ready."),
		}},
		{Name: "sprint-pitch", Marker: fmt.Sprintf("Vision issue #%d: Add billing", n), Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(outbox(billingSprint(n), `{"comments": [], "ready": false}`))),
			claudetest.Text("Pitched."),
		}},
		{Name: "sprint-review", Marker: "Review pull request #", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"APPROVE","verdict_reason":"does what the sub-issue asks","review_markdown":"Looks right."}`),
			claudetest.Text("Review written."),
		}},
		{Name: "sprint-api", Turns: []claudetest.Turn{implement("api.txt", "GET /invoices"), claudetest.Text("Added api.txt.")}},
		{Name: "sprint-schema", Turns: []claudetest.Turn{implement("schema.txt", "invoices table"), claudetest.Text("Added schema.txt.")}},
	}
}

// billingSprint is the pitched sprint document of vision n: two
// sub-issues, the API depending on the schema, each naming the dev
// scenario that implements it. The API is labelled priority, which puts
// it first in the dev agent's queue: only the dependency gate makes the
// schema go first.
func billingSprint(n int64) string {
	return fmt.Sprintf(`# Sprint: Add billing

## Vision issues
- #%[1]d — Add billing

## What this enables
Paying customers.

## What exists today
A README.

## Complexity
Two sub-issues, mostly glue.

## Risks
Payment provider outages.

## Cost — new infra to maintain
One webhook endpoint.

## Recommendation
Worth it.

## Sub-issues
<!-- filer:begin -->
- id: schema
  title: "vision(#%[1]d): billing schema"
  labels: [backlog]
  depends_on: []
  body: |
    ## Goal
    Store invoices. scenario: sprint-schema

    ## Acceptance criteria
    - [ ] schema.txt describes the invoices table
- id: api
  title: "vision(#%[1]d): billing API"
  labels: [backlog, priority]
  depends_on: [schema]
  body: |
    ## Goal
    Serve invoices. scenario: sprint-api

    ## Acceptance criteria
    - [ ] api.txt names GET /invoices
<!-- filer:end -->
`, n)
}

// sprintPull returns the open or merged ops pull request whose sprint
// marker names vision n.
func sprintPull(t testing.TB, ops *forge.RepoClient, n int64) (forge.PullRequest, bool) {
	t.Helper()
	ps, err := ops.ListPulls(testCtx(t), forge.StateAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if m, ok := forge.FindMarker(p.Body, forge.MarkerSprint); ok && m.Fields["vision"] == fmt.Sprint(n) {
			return p, true
		}
	}
	return forge.PullRequest{}, false
}

// commentBy reports whether author left a comment on n whose body
// satisfies ok.
func commentBy(t testing.TB, r *forge.RepoClient, n int64, author string, ok func(body string) bool) bool {
	t.Helper()
	cs, err := r.ListComments(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.EqualFold(c.Author, author) && ok(c.Body) {
			return true
		}
	}
	return false
}

// filedSubIssues returns the filer bot's sub-issues of vision n by title
// without the "vision(#n): " prefix.
func filedSubIssues(t testing.TB, r *forge.RepoClient, n int64) map[string]forge.Issue {
	t.Helper()
	is, err := r.ListIssues(testCtx(t), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]forge.Issue{}
	for _, i := range is {
		if strings.EqualFold(i.Author, config.DefaultBotUser(config.RoleFiler)) {
			out[strings.TrimPrefix(i.Title, fmt.Sprintf("vision(#%d): ", n))] = i
		}
	}
	return out
}
