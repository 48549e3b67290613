package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestSystemSprintFiled: on a project `disinto init` provisioned, a
// sprint pull request that architect-bot opens on the ops repository and
// the administrator approves and merges is filed by the running daemon,
// woken by the ops repository's webhook: the sub-issues exist as
// filer-bot's, with their markers and dependencies, the vision is in
// progress and the pull request says what was filed. Once a human has
// closed the sub-issues, `disinto run filer` closes the vision with its
// completion comment. Only the architect's roles run (no dev agent picks
// up the sub-issues), and the filer with them.
func TestSystemSprintFiled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea and the daemon")
	}
	y := bootSystemEnv(t, 2*time.Second, []string{"AGENT_ROLES=architect"})
	ctx := testCtx(t)
	admin := y.srv.Admin(t)
	proj, ops := admin.Repo("acme", "widgets"), admin.Repo("acme", "widgets-ops")
	env, err := config.ReadEnvFile(y.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	if env["FORGE_FILER_TOKEN"] == "" || env["FORGE_ARCHITECT_TOKEN"] == "" {
		t.Fatalf("init wrote no filer or architect token: %v", keys(env))
	}
	// The filer runs at start (in its slot, a minute or so in), then on
	// the architect's 6 h cadence.
	rig.Await(t, "the filer's run at start", 3*time.Minute, y.died, func() bool {
		for _, j := range y.status(t).Jobs {
			if j.Role == string(config.RoleFiler) && time.Until(j.Next) > 5*time.Hour {
				return true
			}
		}
		return false
	})

	vision, err := proj.CreateIssue(ctx, forge.NewIssue{Title: "Add billing", Body: "Customers pay.", Labels: []forge.LabelName{forge.LabelVision}})
	if err != nil {
		t.Fatal(err)
	}
	sprint := fmt.Sprintf(`# Sprint: Add billing

## Vision issues
- #%[1]d — Add billing

## Sub-issues
<!-- filer:begin -->
- id: schema
  title: vision(#%[1]d): billing schema
  labels: [backlog]
  body: |
    ## Goal
    The tables.

    ## Acceptance criteria
    - [ ] migrations run
- id: api
  title: vision(#%[1]d): billing API
  labels: [backlog]
  depends_on: [schema]
  body: |
    ## Goal
    The endpoints.
<!-- filer:end -->
`, vision.Number)
	arch := y.srv.Client(t, env["FORGE_ARCHITECT_TOKEN"], "architect-bot").Repo("acme", "widgets-ops")
	branch := fmt.Sprintf("architect/sprint-vision-%d", vision.Number)
	if _, err := arch.CreateBranch(ctx, branch, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := arch.PutFile(ctx, forge.FileChange{Path: "sprints/add-billing.md", Content: []byte(sprint), Branch: branch, Message: "sprint: add add-billing.md"}); err != nil {
		t.Fatal(err)
	}
	pr, err := arch.CreatePull(ctx, forge.NewPull{Title: "architect: Add billing", Body: sprint, Head: branch, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	adminApproveAndMerge(t, ops, pr, "ACCEPT")

	filed := func() map[string]forge.Issue {
		t.Helper()
		is, err := proj.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]forge.Issue{}
		for _, i := range is {
			if strings.EqualFold(i.Author, config.DefaultBotUser(config.RoleFiler)) {
				out[strings.TrimPrefix(i.Title, fmt.Sprintf("vision(#%d): ", vision.Number))] = i
			}
		}
		return out
	}
	// The webhook wakes the filer; its next scheduled run is hours away.
	rig.Await(t, "the filer files the merged sprint", 2*time.Minute, y.died, func() bool { return len(filed()) == 2 })
	subs := filed()
	schema, api := subs["billing schema"], subs["billing API"]
	if !strings.HasSuffix(schema.Body, fmt.Sprintf("<!-- decomposed-from: #%d, sprint: add-billing, id: schema -->", vision.Number)) ||
		!strings.Contains(api.Body, fmt.Sprintf("## Depends on\n- #%d\n", schema.Number)) || !api.HasLabel(forge.LabelBacklog) {
		t.Fatalf("sub-issues: %+v", subs)
	}
	rig.Await(t, "the filer's comment on the sprint pull request", time.Minute, y.died, func() bool {
		cs, err := ops.ListComments(ctx, pr.Number)
		return err == nil && len(cs) == 1 && strings.Contains(cs[0].Body, fmt.Sprintf("`api` → acme/widgets#%d", api.Number))
	})
	if got, err := proj.GetIssue(ctx, vision.Number); err != nil || !got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("vision after filing: %+v %v", got, err)
	}

	for _, is := range subs {
		if err := proj.CloseIssue(ctx, is.Number); err != nil {
			t.Fatal(err)
		}
	}
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	y.MustRun(t, y.daemonEnv, "run", "filer", "--project", "widgets", "--once")
	got, err := proj.GetIssue(ctx, vision.Number)
	if err != nil || got.State != forge.StateClosed || got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("vision after its sub-issues closed: %+v %v", got, err)
	}
	cs, err := proj.ListComments(ctx, vision.Number)
	if err != nil || len(cs) != 1 || !strings.HasPrefix(cs[0].Body, forge.VisionCompletedHeading) {
		t.Fatalf("vision comments: %+v %v", cs, err)
	}
	var runs []ledger.Record
	for _, r := range ledgerRecords(t, y.Data) {
		if r.Role == string(config.RoleFiler) {
			runs = append(runs, r)
		}
	}
	if len(runs) != 2 || runs[0].Code != "sprint.filed" || runs[1].Code != "vision.completed" {
		t.Fatalf("filer ledger records: %+v", runs)
	}
	for _, hit := range filesContaining(t, y.Data, y.secrets) {
		t.Error(hit)
	}
}

// adminApproveAndMerge approves pr at its head as the administrator and
// merges it. The forge handles the push of a pull request's head in the
// background, and the ops repository's protection dismisses approvals
// that push makes stale: on a busy machine that handling can come after
// an approval given at once. A merge refused for want of approvals is
// approved again, as the administrator would, a few times at most.
func adminApproveAndMerge(t *testing.T, repo *forge.RepoClient, pr forge.PullRequest, body string) {
	t.Helper()
	ctx := testCtx(t)
	for attempt := 1; ; attempt++ {
		if _, err := repo.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: body, CommitID: pr.HeadSHA}); err != nil {
			t.Fatal(err)
		}
		err := repo.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA})
		if err == nil {
			return
		}
		if attempt == 5 || !strings.Contains(err.Error(), "approvals") {
			t.Fatalf("merge #%d after approving it (attempt %d): %v", pr.Number, attempt, err)
		}
		t.Logf("merge #%d refused (%v); approving again", pr.Number, err)
		time.Sleep(time.Duration(attempt) * time.Second)
	}
}
