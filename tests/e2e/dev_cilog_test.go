package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/cilog/cilogtest"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// TestDevCILogReachesTheModel: CI fails on the pull request's head with a
// log holding a compiler error no status mentions, and the resumed
// session's request to the model carries that exact text. Three dev bots
// work three issues against the real Gitea, each with another log source:
// Woodpecker (a stand-in server in the real API's shape), the forge's
// Actions job logs (a stand-in in Gitea 1.26's shape), and the real
// Gitea, which serves no Actions: there the session gets the status's
// description and link, as without a log source.
func TestDevCILogReachesTheModel(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t,
		claudetest.Scenario{Name: "cilog-woodpecker", Turns: fixTurns(1)},
		claudetest.Scenario{Name: "cilog-actions", Turns: fixTurns(1)},
		claudetest.Scenario{Name: "cilog-absent", Turns: fixTurns(1)},
	)
	const (
		wpErr      = "./widget.go:12:2: undefined: frobnicateWidgetWP7q"
		actionsErr = "./widget.go:40:9: cannot use zork (variable of type int) as string value in return statement: ACT3k"
	)

	// Woodpecker: the bot reads the pipeline of the head from the API.
	wp := cilogtest.StartWoodpecker(t, 3, "wp-token-e2e-0001")
	wpSrc, err := cilog.NewWoodpecker(cilog.WoodpeckerOptions{Server: wp.URL, Token: wp.Token, RepoID: 3})
	if err != nil {
		t.Fatal(err)
	}
	wb := e.newBot("dev-wp")
	wb.rebuild(func(o *dev.Options) {
		o.CISystem = config.CIWoodpecker
		o.CILogs = cilog.New(cilog.Options{Woodpecker: wpSrc})
	})
	a := e.issue("CI log from Woodpecker", "scenario: cilog-woodpecker", forge.LabelBacklog)
	wb.tickUntil("pull request opened", 2, func() bool { return wb.stage(a) == dev.StageAwaitingCI })
	pr := e.onlyPull(branch(a))
	wp.AddPipeline(4, pr.HeadSHA,
		cilogtest.Step{Name: "clone", State: "success"},
		cilogtest.Step{Name: "build", State: "failure", ExitCode: 1, Log: []string{"+ go build ./...", "# example.com/widget", wpErr}})
	e.status(pr, "ci/woodpecker/pr/build", "Pipeline failed", fmt.Sprintf("%s/repos/3/pipeline/4", wp.URL))
	wb.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-woodpecker", wpErr, "Log of pipeline 4 (woodpecker; step build exited 1)")

	// Gitea Actions: the status links the job; its log comes from the
	// forge's jobs API.
	acts := startActions(t, e.repo.Owner(), e.repo.Name())
	ab := e.newBot("dev-act")
	ac, err := forge.New(forge.Options{URL: acts.srv.URL, Token: ab.p.Token, User: ab.p.Login})
	if err != nil {
		t.Fatal(err)
	}
	ab.rebuild(func(o *dev.Options) {
		o.CILogs = cilog.New(cilog.Options{Actions: ac.Repo(e.repo.Owner(), e.repo.Name())})
	})
	b := e.issue("CI log from Actions", "scenario: cilog-actions", forge.LabelBacklog)
	ab.tickUntil("pull request opened", 2, func() bool { return ab.stage(b) == dev.StageAwaitingCI })
	pr = e.onlyPull(branch(b))
	acts.add(77, 5, pr.HeadSHA, "# example.com/widget\n"+actionsErr+"\n❌ Failure - Main go build")
	e.status(pr, "ci / build (pull_request)", "Failing after 4s", fmt.Sprintf("%s/%s/actions/runs/5/jobs/77", e.srv.URL, e.repo.Slug()))
	ab.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-actions", actionsErr, "Log of job ci / build (pull_request) (actions)")
	if acts.token.Load() != 2 {
		t.Fatalf("%d authenticated Actions calls, want the job and its log", acts.token.Load())
	}

	// The real Gitea, without Actions: not found, and the statuses alone.
	nb := e.newBot("dev-none")
	nb.rebuild(func(o *dev.Options) { o.CILogs = cilog.New(cilog.Options{Actions: o.Forge.(*forge.RepoClient)}) })
	c := e.issue("No CI log", "scenario: cilog-absent", forge.LabelBacklog)
	nb.tickUntil("pull request opened", 2, func() bool { return nb.stage(c) == dev.StageAwaitingCI })
	pr = e.onlyPull(branch(c))
	link := fmt.Sprintf("%s/%s/actions/runs/1/jobs/1", e.srv.URL, e.repo.Slug())
	e.status(pr, "ci / build (pull_request)", "Failing after 1s: TestAbsentLogQ9", link)
	nb.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-absent", "Failing after 1s: TestAbsentLogQ9", link)
	if anyText(e.model.MessageRequests("cilog-absent"), "Log of ") {
		t.Fatal("a log section without a log")
	}
}

// wantInResume fails t unless a request of scenario's resumed session
// (after its first) carries every want.
func wantInResume(t *testing.T, e *devEnv, scenario string, want ...string) {
	t.Helper()
	reqs := e.model.MessageRequests(scenario)
	if len(reqs) < 3 {
		t.Fatalf("%s: %d model requests, want a resumed session", scenario, len(reqs))
	}
	for _, w := range want {
		if anyText(reqs[:2], w) {
			t.Fatalf("%s: %q reached the model before CI ran", scenario, w)
		}
		if !anyText(reqs[2:], w) {
			t.Errorf("%s: the resumed session did not see %q", scenario, w)
		}
	}
}

// status posts a commit status on pr's head as a CI system would.
func (e *devEnv) status(pr forge.PullRequest, context, desc, target string) {
	e.t.Helper()
	if err := e.repo.CreateStatus(testCtx(e.t), pr.HeadSHA, forge.CommitStatus{
		Context: context, State: forge.CIFailure, Description: desc, TargetURL: target,
	}); err != nil {
		e.t.Fatal(err)
	}
}

// actionsStandIn serves the Actions job endpoints of Gitea 1.26 for one
// repository (GET /api/v1/repos/{owner}/{repo}/actions/jobs/{id} and
// .../logs, in the shape of routers/api/v1/repo): job JSON as
// structs.ActionWorkflowJob, logs as the stored "<timestamp> <line>"
// text. Anything else is the JSON 404 Gitea sends.
type actionsStandIn struct {
	srv    *httptest.Server
	prefix string
	mu     sync.Mutex
	jobs   map[int64]map[string]any
	logs   map[int64]string
	// token counts requests that carried a token.
	token atomic.Int64
}

func startActions(t *testing.T, owner, repo string) *actionsStandIn {
	a := &actionsStandIn{prefix: "/api/v1/repos/" + owner + "/" + repo + "/actions/jobs/", jobs: map[int64]map[string]any{}, logs: map[int64]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

// add records job id of run on sha with log (one line per output line).
func (a *actionsStandIn) add(id, run int64, sha, log string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.jobs[id] = map[string]any{"id": id, "url": fmt.Sprintf("%s%s%d", a.srv.URL, a.prefix, id),
		"html_url": fmt.Sprintf("%s/actions/runs/%d/jobs/%d", a.srv.URL, run, id), "run_id": run, "name": "build",
		"labels": []string{"ubuntu-latest"}, "run_attempt": 1, "head_sha": sha, "status": "completed", "conclusion": "failure",
		"steps":      []map[string]any{{"name": "go build", "number": 1, "status": "completed", "conclusion": "failure"}},
		"created_at": "2026-12-01T10:00:00Z", "started_at": "2026-12-01T10:00:01Z", "completed_at": "2026-12-01T10:00:05Z"}
	var b strings.Builder
	for i, ln := range strings.Split(log, "\n") {
		fmt.Fprintf(&b, "2026-12-01T10:00:0%d.1234567Z %s\n", i%10, ln)
	}
	a.logs[id] = b.String()
}

func (a *actionsStandIn) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "token ") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	a.token.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	rest, _ := strings.CutPrefix(r.URL.Path, a.prefix)
	var id int64
	if n, _ := fmt.Sscanf(rest, "%d", &id); n == 1 {
		switch {
		case rest == fmt.Sprint(id) && a.jobs[id] != nil:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(a.jobs[id])
			return
		case rest == fmt.Sprintf("%d/logs", id) && a.logs[id] != "":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte(a.logs[id]))
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"errors":["job not found"],"message":"job not found","url":"` + a.srv.URL + `/api/swagger"}`))
}
