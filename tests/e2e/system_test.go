package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestSystem drives the product as an operator does, through the built
// binary: `disinto init` provisions a real Gitea and writes the project
// file and env file, `disinto config check` accepts them, `disinto daemon`
// runs the dev and review agents with one model runner (the real claude
// CLI against the scripted model server), and a backlog issue filed by a
// human becomes a reviewed, merged pull request woken by webhooks alone
// (POLL_INTERVAL is an hour). Then status, logs and /metrics show the runs,
// SIGTERM stops the daemon cleanly, and no credential of the env file shows
// up in the daemon's output, its data dir or any forge comment.
func TestSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	start := time.Now()
	t.Cleanup(func() { t.Logf("TestSystem took %s", time.Since(start).Round(time.Second)) })

	y := bootWith(t, 30*time.Second, laneOptions{dashboard: true},
		// First: the review prompt mentions the issue, whose text selects
		// the dev scenario.
		claudetest.Scenario{Name: "sys-review-loop", Marker: fmt.Sprintf("Review pull request #%d of", loopReviewPR), Turns: []claudetest.Turn{
			writeReview(`{"verdict":"REQUEST_CHANGES","verdict_reason":"the gadget needs a name","review_markdown":"- **medium** gadget.txt: name the gadget"}`),
			claudetest.Text("Review written."),
			writeReview(`{"verdict":"APPROVE","verdict_reason":"named now","review_markdown":"### Previous Findings\n- name the gadget: FIXED"}`),
			claudetest.Text("Re-review written."),
		}},
		claudetest.Scenario{Name: "sys-review", Marker: "Review pull request #", Turns: []claudetest.Turn{
			withEnvList(writeReview(`{"verdict":"APPROVE","verdict_reason":"adds the widget as asked","review_markdown":"Looks right: widget.txt is added."}`)),
			claudetest.Text("Review written."),
		}},
		claudetest.Scenario{Name: "sys-dev", Turns: []claudetest.Turn{
			withEnvList(implement("widget.txt", "a widget")),
			claudetest.Text("Added widget.txt."),
		}},
		claudetest.Scenario{Name: "sys-escalate", Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(`printf 'PHASE:escalate\nReason: which colour?\n' > "$DISINTO_PHASE_FILE" && echo asked`)),
			claudetest.Text("Asked for a colour."),
		}},
		claudetest.Scenario{Name: "sys-loop", Turns: []claudetest.Turn{
			implement("gadget.txt", "a gadget"),
			claudetest.Text("Added gadget.txt."),
			implement("gadget.txt", "name: sprocket"),
			claudetest.Text("Named the gadget."),
		}},
	)
	s, srv, model, d, secrets := y.Install, y.srv, y.model, y.d, y.secrets
	daemonEnv, initArgs, statusBase, died := y.daemonEnv, y.initArgs, "http://"+y.statusListen, y.died

	// A human files an issue and puts it on the backlog; the dev agent
	// implements it, the review agent approves, the dev agent merges.
	w := &sysWatch{t: t, ctx: testCtx(t), admin: srv.Admin(t).Repo("acme", "widgets"), died: died}
	admin, ctx := w.admin, w.ctx
	// The daemon opens the project's dashboard issue first, as its dev bot,
	// and pins it.
	rig.Await(t, "the dashboard issue", time.Minute, died, func() bool {
		i, err := admin.GetIssue(ctx, 1)
		return err == nil && i.Author == "dev-bot" && i.Title == "Factory dashboard" && strings.Contains(i.Body, "## In flight")
	})
	iss := w.backlogIssue("Add a widget", "scenario: sys-dev\n\nAdd widget.txt.")
	pr := w.mergedPull(iss)
	t.Logf("issue #%d became merged pull request #%d after %s", iss, pr.Number, time.Since(start).Round(time.Second))
	if rs := w.botReviews(pr.Number); len(rs) != 1 || rs[0].State != forge.ReviewApprove || rs[0].CommitID != pr.HeadSHA {
		t.Errorf("review-bot's reviews of the merged head %s: %+v", pr.HeadSHA, rs)
	}

	// Each prompt's environment section names only variables the session
	// really has.
	for _, sc := range []string{"sys-dev", "sys-review"} {
		checkPromptEnv(t, model.MessageRequests(sc))
	}

	// The model's commit carries the dev bot's identity although the
	// daemon's HOME has no git configuration.
	check := filepath.Join(t.TempDir(), "check")
	runGit(t, "", "clone", "-q", strings.Replace(srv.URL, "://", "://"+srv.AdminLogin+":"+srv.AdminPassword+"@", 1)+"/acme/widgets.git", check)
	runGit(t, check, "fetch", "-q", "origin", fmt.Sprintf("refs/pull/%d/head", pr.Number))
	if got := runGit(t, check, "log", "-1", "--format=%an <%ae>", pr.HeadSHA); got != "dev-bot <dev-bot@disinto.local>" {
		t.Errorf("the pull request's commit is by %s, want dev-bot", got)
	}

	// The operator runs init again while the daemon works: nothing changes,
	// and the daemon keeps its credentials and webhook secret.
	envBefore, err := os.ReadFile(s.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	if out := s.MustRun(t, nil, initArgs...); !strings.Contains(out, "nothing changed") {
		t.Errorf("init run again changed something:\n%s", out)
	}
	if envAfter, err := os.ReadFile(s.EnvFile); err != nil || string(envAfter) != string(envBefore) {
		t.Errorf("init run again rewrote the env file (%v)", err)
	}

	// The review loop, by webhooks alone: changes requested, the dev agent
	// resumes its session and pushes a fix, the re-review approves it.
	loop := w.backlogIssue("Add a gadget", "scenario: sys-loop\n\nAdd gadget.txt.")
	loopPR := w.mergedPull(loop)
	if loopPR.Number != loopReviewPR {
		t.Fatalf("the second pull request is #%d; the review scenario expects #%d", loopPR.Number, loopReviewPR)
	}
	rs := w.botReviews(loopPR.Number)
	if len(rs) != 2 || rs[0].State != forge.ReviewRequestChanges || rs[1].State != forge.ReviewApprove ||
		rs[1].CommitID != loopPR.HeadSHA || rs[0].CommitID == loopPR.HeadSHA {
		t.Errorf("review-bot's reviews of #%d (head %s): %+v", loopPR.Number, loopPR.HeadSHA, rs)
	}
	t.Logf("the review loop merged pull request #%d after %s", loopPR.Number, time.Since(start).Round(time.Second))

	// The model asks for a human: the escalation mentions the admin that
	// init provisioned with, and the issue is blocked.
	esc := w.backlogIssue("Paint the widget", "scenario: sys-escalate\n\nPaint it.")
	rig.Await(t, "the escalation", 3*time.Minute, died, func() bool {
		i, err := admin.GetIssue(ctx, esc)
		if err != nil {
			t.Fatal(err)
		}
		return i.HasLabel(forge.LabelBlocked) && !i.HasLabel(forge.LabelInProgress)
	})
	if !hasComment(t, admin, esc, "@"+srv.AdminLogin+" The dev agent needs a human decision") {
		t.Errorf("the escalation of #%d does not mention the admin %s", esc, srv.AdminLogin)
	}

	// What the operator sees while the daemon runs.
	var st struct {
		Daemon *struct {
			PID int `json:"pid"`
		} `json:"daemon"`
		Recent []ledger.Record `json:"recent"`
		Ops    []struct {
			Head  string `json:"head"`
			Error string `json:"error"`
		} `json:"ops"`
		TrackRecords []struct {
			Project    string `json:"project"`
			WindowDays int    `json:"window_days"`
		} `json:"track_records"`
	}
	// Two merges, one escalation and three reviews (PR 3, and PR 5 twice); the status is
	// read once the ledger has them all, as the agents record a run after
	// its last forge call.
	rig.Await(t, "every run in disinto status", time.Minute, died, func() bool {
		out := s.MustRun(t, nil, "status", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		return countRuns(st.Recent, "dev", ledger.ReasonMerged) == 2 && countRuns(st.Recent, "review", "") == 3 &&
			countRuns(st.Recent, "dev", ledger.ReasonEscalated) == 1
	})
	if st.Daemon == nil || st.Daemon.PID != d.Cmd.Process.Pid {
		t.Errorf("status does not show the live daemon: %+v", st.Daemon)
	}
	if n := len(st.Recent); n != 6 {
		t.Errorf("%d runs in the ledger, want 6: %+v", n, st.Recent)
	}
	// The same daemon read by its URL, as from another machine.
	var remote struct {
		Daemon *json.RawMessage `json:"daemon"`
		Recent []ledger.Record  `json:"recent"`
	}
	if err := json.Unmarshal([]byte(s.MustRun(t, nil, "status", "--json", "--url", statusBase)), &remote); err != nil {
		t.Fatalf("status --url: %v", err)
	}
	if remote.Daemon == nil || len(remote.Recent) != len(st.Recent) {
		t.Errorf("status --url %s: daemon %v, %d runs; want the daemon and %d runs", statusBase, remote.Daemon != nil, len(remote.Recent), len(st.Recent))
	}
	// The project's track record, read from the forge at the start.
	if len(st.TrackRecords) != 1 || st.TrackRecords[0].Project != "widgets" || st.TrackRecords[0].WindowDays != 30 {
		t.Errorf("status shows no track record of widgets: %+v", st.TrackRecords)
	}
	// The daemon keeps the ops checkout itself (no ops_repo_root is set).
	if len(st.Ops) != 1 || st.Ops[0].Head == "" || st.Ops[0].Error != "" {
		t.Errorf("status shows no synced ops checkout: %+v", st.Ops)
	}
	// Every run the dev bot finished is in its journal, in its .profile
	// repository, written by the daemon from the run's record.
	rig.Await(t, fmt.Sprintf("the dev bot's journal entry of issue #%d", iss), time.Minute, died, func() bool {
		f, err := srv.Admin(t).Repo("dev-bot", ".profile").GetFile(ctx, "journal/"+time.Now().UTC().Format("2006-01-02")+".md", "main")
		return err == nil && strings.Contains(string(f.Content), fmt.Sprintf("issue #%d, pull request #%d, merged", iss, pr.Number))
	})
	logs := s.MustRun(t, nil, "logs", "--agent", "dev")
	for _, want := range []string{fmt.Sprintf("[dev] claimed issue=%d ", iss), fmt.Sprintf("[dev] merged issue=%d ", iss), "[dev] changes requested",
		fmt.Sprintf("[dev] merged issue=%d ", loop)} {
		if !strings.Contains(logs, want) {
			t.Errorf("disinto logs --agent dev lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "[review]") {
		t.Errorf("disinto logs --agent dev shows the review agent:\n%s", logs)
	}
	// A one-shot run next to the daemon must not start: one writer of the
	// per-issue state.
	if _, errOut, err := s.Run(daemonEnv, "run", "dev", "--project", "widgets", "--once"); err == nil {
		t.Errorf("disinto run next to a running daemon succeeded: %s", errOut)
	}
	// The same, for people: the status page in a real browser.
	checkStatusPage(t, statusBase, "widgets", "merged", "escalated", fmt.Sprintf("PR #%d", pr.Number), "escalated.by_model")
	m := httpGet(t, statusBase+"/metrics")
	if n := metricSum(m, "disinto_forge_requests_total", ""); n <= 0 {
		t.Errorf("forge requests in /metrics: %v", n)
	}
	for _, want := range []struct{ role, reason string }{{"dev", "merged"}, {"review", "reviewed"}} {
		if n := metricSum(m, "disinto_runs_total", `role="`+want.role+`",.*reason="`+want.reason+`"|reason="`+want.reason+`",.*role="`+want.role+`"`); n < 2 {
			t.Errorf("runs of %s with outcome %s in /metrics: %v\n%s", want.role, want.reason, n, grepLines(m, "disinto_runs_total"))
		}
	}
	if n := metricSum(m, "disinto_webhook_deliveries_total", `result="accepted"`); n < 2 {
		t.Errorf("accepted webhook deliveries: %v", n)
	}

	if err := d.Stop(t, time.Minute); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v\n%s", err, d.Out.String())
	}
	if isFile(filepath.Join(s.Data, "daemon.json")) {
		t.Error("daemon.json left behind after a clean exit")
	}

	// One-shot runs after the daemon: nothing is left to do.
	for _, role := range []string{"dev", "review"} {
		s.MustRun(t, daemonEnv, "run", role, "--project", "widgets", "--once")
	}
	if recs := ledgerRecords(t, s.Data); len(recs) != 6 {
		t.Errorf("one-shot runs after the daemon recorded runs: %+v", recs)
	}
	// With no daemon, status reads the data dir.
	var offline struct {
		Daemon   *json.RawMessage        `json:"daemon"`
		Projects []struct{ Name string } `json:"projects"`
		Jobs     []struct{ Role string } `json:"jobs"`
		Recent   []ledger.Record         `json:"recent"`
	}
	if err := json.Unmarshal([]byte(s.MustRun(t, nil, "status", "--json")), &offline); err != nil {
		t.Fatal(err)
	}
	// Jobs: every job that ran: dev and review, the roles that run at
	// every start (the vault, the filer), the supervisor when its first
	// run came before the stop; never one whose first run is hours away.
	roles := map[string]bool{}
	for _, j := range offline.Jobs {
		roles[j.Role] = true
	}
	if offline.Daemon != nil || len(offline.Projects) != 1 || !roles["dev"] || !roles["review"] ||
		roles["gardener"] || roles["architect"] || roles["planner"] || roles["predictor"] || len(offline.Recent) != 6 {
		t.Errorf("offline status: %+v", offline)
	}

	// Redaction: no credential anywhere the daemon wrote or posted.
	out := d.Out.String()
	if strings.Contains(out, "\x1b[") {
		t.Error("the daemon colours its output although stderr is not a terminal")
	}
	for name, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("the daemon's output holds %s", name)
		}
	}
	for _, hit := range filesContaining(t, s.Data, secrets) {
		t.Error(hit)
	}
	for _, n := range []int64{iss, pr.Number, loop, loopPR.Number, esc} {
		cs, err := admin.ListComments(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			for name, v := range secrets {
				if strings.Contains(c.Body, v) {
					t.Errorf("comment %d on #%d by %s holds %s", c.ID, n, c.Author, name)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("daemon output:\n%s", out)
	}
}

// loopReviewPR is the number of the second pull request: issues and pull
// requests share one sequence (the dashboard 1, issue 2, PR 3, issue 4,
// PR 5).
const loopReviewPR = 5

// sysWatch follows the project on the forge as its human owner does.
type sysWatch struct {
	t     testing.TB
	ctx   context.Context
	admin *forge.RepoClient
	// died reports why the daemon is gone, or "".
	died func() string
}

// backlogIssue files an issue, then labels it backlog, as a human does.
func (w *sysWatch) backlogIssue(title, body string) int64 {
	w.t.Helper()
	iss, err := w.admin.CreateIssue(w.ctx, forge.NewIssue{Title: title, Body: body})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.admin.AddLabels(w.ctx, iss.Number, forge.LabelBacklog); err != nil {
		w.t.Fatal(err)
	}
	return iss.Number
}

// mergedPull waits for the pull request that fixes issue n to be merged
// and for the dev agent to release the closed issue.
func (w *sysWatch) mergedPull(n int64) forge.PullRequest {
	w.t.Helper()
	var pr forge.PullRequest
	rig.Await(w.t, fmt.Sprintf("a pull request for issue #%d", n), 3*time.Minute, w.died, func() bool {
		ps, err := w.admin.ListPulls(w.ctx, forge.StateAll)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, p := range ps {
			if strings.HasPrefix(p.Body, fmt.Sprintf("Fixes #%d\n", n)) || p.Body == fmt.Sprintf("Fixes #%d", n) {
				pr = p
				return true
			}
		}
		return false
	})
	rig.Await(w.t, fmt.Sprintf("pull request #%d merged and issue #%d closed", pr.Number, n), 4*time.Minute, w.died, func() bool {
		p, err := w.admin.GetPull(w.ctx, pr.Number)
		if err != nil {
			w.t.Fatal(err)
		}
		i, err := w.admin.GetIssue(w.ctx, n)
		if err != nil {
			w.t.Fatal(err)
		}
		pr = p
		return p.Merged && i.State == forge.StateClosed && len(i.Assignees) == 0 &&
			!i.HasLabel(forge.LabelInProgress) && !i.HasLabel(forge.LabelBacklog)
	})
	return pr
}

// botReviews returns review-bot's formal reviews of pull request n.
func (w *sysWatch) botReviews(n int64) []forge.Review {
	w.t.Helper()
	rs, err := w.admin.ListReviews(w.ctx, n)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []forge.Review
	for _, r := range rs {
		if r.Author == config.DefaultBotUser(config.RoleReview) {
			out = append(out, r)
		}
	}
	return out
}

// envListMarker starts the tool output of withEnvList.
const envListMarker = "SESSION-ENV:"

// withEnvList adds a tool call to turn that lists the names of the
// session's environment variables.
func withEnvList(turn claudetest.Turn) claudetest.Turn {
	turn.Blocks = append(turn.Blocks, claudetest.Bash(`printf '`+envListMarker+` %s\n' "$(env | cut -d= -f1 | sort | tr '\n' ' ')"`))
	return turn
}

// checkPromptEnv checks that every variable the first prompt of a session
// says is set for the model is in the session's environment, as listed by
// withEnvList's tool call.
func checkPromptEnv(t testing.TB, reqs []claudetest.Request) {
	t.Helper()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests, want the prompt and the tool results", len(reqs))
	}
	have := map[string]bool{}
	for _, r := range reqs[1].ToolResults {
		if _, list, ok := strings.Cut(r, envListMarker); ok {
			for _, n := range strings.Fields(list) {
				have[n] = true
			}
		}
	}
	if len(have) == 0 {
		t.Fatalf("no environment listing in the tool results: %q", reqs[1].ToolResults)
	}
	prompt := strings.Join(reqs[0].Texts, "\n")
	_, section, ok := strings.Cut(prompt, "Environment variables set for you:\n")
	if !ok {
		t.Fatalf("the prompt has no environment section:\n%s", prompt)
	}
	for _, line := range strings.Split(section, "\n") {
		name, ok := strings.CutPrefix(line, "- ")
		if !ok {
			break
		}
		name, _, _ = strings.Cut(name, "=")
		name, _, _ = strings.Cut(name, " ")
		if !have[name] {
			t.Errorf("the %s prompt names %s, which the session does not have", reqs[0].Scenario, name)
		}
	}
}
