package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestSystemStatusWakesReview: on a project whose CI posts commit
// statuses, the review agent of the running daemon waits on a pull
// request whose CI is pending; the forge's status webhook for the green
// result wakes it, and the verdict is on the forge long before the
// review's next scheduled tick (POLL_INTERVAL is an hour), so the event
// alone brought it.
func TestSystemStatusWakesReview(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	y := bootWith(t, 5*time.Second, laneOptions{env: []string{"AGENT_ROLES=review"}, project: func(text string) string {
		if strings.Count(text, `system = "none"`) != 1 {
			t.Fatalf("the project file has no single ci.system to set:\n%s", text)
		}
		return strings.Replace(text, `system = "none"`, `system = "statuses"`, 1)
	}}, claudetest.Scenario{Name: "status-review", Marker: "Review pull request #1 of", Turns: []claudetest.Turn{
		writeReview(`{"verdict":"APPROVE","verdict_reason":"adds the widget","review_markdown":"Looks right: widget.go is added."}`),
		claudetest.Text("Review written."),
	}})
	ctx := testCtx(t)
	admin := y.srv.Admin(t).Repo("acme", "widgets")
	review := func() (runs int, running bool, next time.Time) {
		t.Helper()
		var st struct {
			Jobs []struct {
				Role    string    `json:"role"`
				Next    time.Time `json:"next"`
				Running bool      `json:"running"`
				Runs    int       `json:"runs"`
			} `json:"jobs"`
		}
		out := y.MustRun(t, nil, "status", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		for _, j := range st.Jobs {
			if j.Role == string(config.RoleReview) {
				return j.Runs, j.Running, j.Next
			}
		}
		t.Fatalf("no review job: %s", out)
		return 0, false, time.Time{}
	}
	// The review's run at start, then nothing scheduled for an hour.
	rig.Await(t, "the review's run at start", 3*time.Minute, y.died, func() bool {
		runs, running, next := review()
		return runs >= 1 && !running && time.Until(next) > 30*time.Minute
	})
	before, _, _ := review()

	if _, err := admin.CreateBranch(ctx, "widget", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutFile(ctx, forge.FileChange{Path: "widget.go", Branch: "widget", Message: "add the widget",
		Content: []byte("package widgets\n\n// Widget is a widget.\ntype Widget struct{}\n")}); err != nil {
		t.Fatal(err)
	}
	head, err := admin.GetBranch(ctx, "widget")
	if err != nil {
		t.Fatal(err)
	}
	ci := func(state forge.CIState) {
		t.Helper()
		if err := admin.CreateStatus(ctx, head.SHA, forge.CommitStatus{Context: "ci/test", State: state, Description: "go test"}); err != nil {
			t.Fatal(err)
		}
	}
	ci(forge.CIPending)
	pr, err := admin.CreatePull(ctx, forge.NewPull{Title: "Add a widget", Body: "Adds widget.go.", Head: "widget", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 1 {
		t.Fatalf("the pull request is #%d; the scenario expects #1", pr.Number)
	}
	reviews := func() []forge.Review {
		t.Helper()
		rs, err := admin.ListReviews(ctx, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		var out []forge.Review
		for _, r := range rs {
			if r.Author == config.DefaultBotUser(config.RoleReview) {
				out = append(out, r)
			}
		}
		return out
	}
	// The pull request's webhook wakes the review, which finds CI pending
	// and waits.
	rig.Await(t, "the review woken by the pull request", time.Minute, y.died, func() bool {
		runs, running, _ := review()
		return runs > before && !running
	})
	if rs := reviews(); len(rs) != 0 {
		t.Fatalf("reviewed before CI was green: %+v", rs)
	}

	waited, _, _ := review()
	greenAt := time.Now()
	ci(forge.CISuccess)
	rig.Await(t, "the review woken by the status", time.Minute, y.died, func() bool {
		runs, running, _ := review()
		return running || runs > waited
	})
	woke := time.Since(greenAt)
	rig.Await(t, "the verdict after the status webhook", 2*time.Minute, y.died, func() bool { return len(reviews()) == 1 })
	took := time.Since(greenAt)
	_, _, next := review()
	if time.Until(next) < 30*time.Minute {
		t.Fatalf("the review's next scheduled tick is at %s: the verdict may be the schedule's, not the webhook's", next)
	}
	if rs := reviews(); rs[0].State != forge.ReviewApprove || rs[0].CommitID != head.SHA {
		t.Fatalf("review-bot's review: %+v", rs[0])
	}
	t.Logf("the status woke the review within %s; the verdict was posted %s after it turned green (the session's time included)",
		woke.Round(100*time.Millisecond), took.Round(100*time.Millisecond))
}
