package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
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

	cli := claudetest.RequireCLI(t)
	srv := forgetest.Start(t)
	s := newSysEnv(t)
	_, modelURL := claudetest.Start(t,
		// First: the review prompt mentions the issue, whose text selects
		// the dev scenario.
		claudetest.Scenario{Name: "sys-review", Marker: "Review pull request #", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"APPROVE","verdict_reason":"adds the widget as asked","review_markdown":"Looks right: widget.txt is added."}`),
			claudetest.Text("Review written."),
		}},
		claudetest.Scenario{Name: "sys-dev", Turns: []claudetest.Turn{
			implement("widget.txt", "a widget"),
			claudetest.Text("Added widget.txt."),
		}},
	)

	// disinto init, as the operator runs it against a fresh forge.
	listen := freeAddr(t)
	s.mustRun(nil, "init", "--yes", "--forge-url", srv.URL, "--admin-user", srv.AdminLogin,
		"--admin-password", srv.AdminPassword, "--repo", "acme/widgets", "--source", sourceRepo(t),
		"--webhook-url", "http://"+listen+"/hooks/forgejo", "--wait-forge", "0s")
	if out := s.mustRun(nil, "config", "check"); !strings.Contains(out, "ok: 1 project(s)") {
		t.Fatalf("config check: %s", out)
	}
	envVals, err := config.ReadEnvFile(s.envFile)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{}
	for k, v := range envVals {
		if config.IsSecretName(k) && v != "" {
			secrets[k] = v
		}
	}
	secrets["admin password"] = srv.AdminPassword
	if envVals["FORGE_TOKEN"] == "" || envVals["FORGE_REVIEW_TOKEN"] == "" || envVals["DISINTO_WEBHOOK_SECRET"] == "" {
		t.Fatalf("env file lacks the dev or review token or the webhook secret: %v", keys(envVals))
	}

	claudeHome := filepath.Join(s.dir, "claude-home")
	daemonEnv := []string{
		"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=test", "CLAUDE_BIN=" + cli, "IS_SANDBOX=1",
		"HOME=" + claudeHome, "CLAUDE_CONFIG_DIR=" + filepath.Join(claudeHome, ".claude"),
		"POLL_INTERVAL=3600", "CLAUDE_MAX_SESSIONS=2", "CLAUDE_TIMEOUT=240",
	}
	d := s.startDaemon(daemonEnv, listen)
	base := "http://" + listen
	died := func() string {
		if d.exited() {
			return "the daemon exited: " + d.output(t)
		}
		return ""
	}
	pollUntil(t, "the daemon's /healthz", time.Minute, died, func() bool {
		return isFile(filepath.Join(s.data, "daemon.json"))
	})
	httpGet(t, base+"/healthz")

	// A human files an issue and puts it on the backlog.
	admin := srv.Admin(t).Repo("acme", "widgets")
	ctx := testCtx(t)
	iss, err := admin.CreateIssue(ctx, forge.NewIssue{Title: "Add a widget", Body: "scenario: sys-dev\n\nAdd widget.txt."})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.AddLabels(ctx, iss.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}

	var pr forge.PullRequest
	pollUntil(t, "a pull request for the issue", 3*time.Minute, died, func() bool {
		ps, err := admin.ListPulls(ctx, forge.StateAll)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if strings.Contains(p.Body, "Fixes #"+strconv.FormatInt(iss.Number, 10)) {
				pr = p
				return true
			}
		}
		return false
	})
	pollUntil(t, "the pull request merged and the issue closed", 4*time.Minute, died, func() bool {
		p, err := admin.GetPull(ctx, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		i, err := admin.GetIssue(ctx, iss.Number)
		if err != nil {
			t.Fatal(err)
		}
		pr = p
		// The dev agent releases the issue after the merge closed it.
		return p.Merged && i.State == forge.StateClosed && len(i.Assignees) == 0 && !i.HasLabel(forge.LabelInProgress)
	})
	t.Logf("issue #%d became merged pull request #%d after %s", iss.Number, pr.Number, time.Since(start).Round(time.Second))

	reviews, err := admin.ListReviews(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	approved := false
	for _, r := range reviews {
		if r.Author == config.DefaultBotUser(config.RoleReview) && r.State == forge.ReviewApprove && r.CommitID == pr.HeadSHA {
			approved = true
		}
	}
	if !approved {
		t.Errorf("no approval by review-bot on the merged head %s: %+v", pr.HeadSHA, reviews)
	}
	if i, err := admin.GetIssue(ctx, iss.Number); err != nil || i.HasLabel(forge.LabelInProgress) || i.HasLabel(forge.LabelBacklog) {
		t.Errorf("issue after merge: %+v %v", i, err)
	}

	// What the operator sees while the daemon runs.
	var st struct {
		Daemon *struct {
			PID int `json:"pid"`
		} `json:"daemon"`
		Recent []ledger.Record `json:"recent"`
	}
	pollUntil(t, "both runs in disinto status", time.Minute, died, func() bool {
		out := s.mustRun(nil, "status", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		return hasRun(st.Recent, "dev", ledger.ReasonMerged) && hasRun(st.Recent, "review", ledger.ReasonReviewed)
	})
	if st.Daemon == nil || st.Daemon.PID != d.cmd.Process.Pid {
		t.Errorf("status does not show the live daemon: %+v", st.Daemon)
	}
	logs := s.mustRun(nil, "logs", "--agent", "dev")
	if !strings.Contains(logs, "claimed") || !strings.Contains(logs, "merged") || strings.Contains(logs, "reviewed") {
		t.Errorf("disinto logs --agent dev:\n%s", logs)
	}
	t.Logf("disinto logs --agent dev:\n%s", logs)
	m := httpGet(t, base+"/metrics")
	if n := metricSum(m, "disinto_forge_requests_total", ""); n <= 0 {
		t.Errorf("forge requests in /metrics: %v", n)
	}
	for _, want := range []struct{ role, reason string }{{"dev", "merged"}, {"review", "reviewed"}} {
		if n := metricSum(m, "disinto_runs_total", `role="`+want.role+`",.*reason="`+want.reason+`"|reason="`+want.reason+`",.*role="`+want.role+`"`); n < 1 {
			t.Errorf("runs of %s with outcome %s in /metrics: %v\n%s", want.role, want.reason, n, grepLines(m, "disinto_runs_total"))
		}
	}
	if n := metricSum(m, "disinto_webhook_deliveries_total", `result="accepted"`); n < 2 {
		t.Errorf("accepted webhook deliveries: %v", n)
	}

	if err := d.stop(t, time.Minute); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v\n%s", err, d.output(t))
	}
	if isFile(filepath.Join(s.data, "daemon.json")) {
		t.Error("daemon.json left behind after a clean exit")
	}

	// Redaction: no credential anywhere the daemon wrote or posted.
	out := d.output(t)
	for name, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("the daemon's output holds %s", name)
		}
	}
	for _, hit := range filesContaining(t, s.data, secrets) {
		t.Error(hit)
	}
	for _, n := range []int64{iss.Number, pr.Number} {
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

func hasRun(recs []ledger.Record, role string, reason ledger.Reason) bool {
	for _, r := range recs {
		if r.Role == role && r.Reason == reason {
			return true
		}
	}
	return false
}

// metricSum adds the samples of metric whose labels match the regular
// expression labels ("" matches all).
func metricSum(text, metric, labels string) float64 {
	re := regexp.MustCompile(labels)
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if labels != "" && !re.MatchString(line) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
