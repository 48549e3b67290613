package cilog_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/forge"
)

// giteaActions serves the Actions job endpoints of Gitea 1.26 for
// repository o/r (routers/api/v1/repo/action.go, actions_run.go): job 57
// of run 9 on headSHA with a log in the stored format, job 58 of another
// commit, and 404 for anything else.
func giteaActions(t *testing.T) (*httptest.Server, *atomic.Int64) {
	logs := "2026-12-01T10:00:00.0000000Z ::group::Run go build ./...\n" +
		"2026-12-01T10:00:01.1234567Z # example.com/widget\n" +
		"2026-12-01T10:00:01.2000000Z ./widget.go:12:2: undefined: frobnicateWidgetZ7\n" +
		"2026-12-01T10:00:01.3000000Z ::endgroup::\n" +
		"2026-12-01T10:00:01.4000000Z ❌ Failure - Main go build\n"
	job := func(id int64, sha string) map[string]any {
		return map[string]any{"id": id, "url": "http://forge/api/v1/repos/o/r/actions/jobs/57", "html_url": "http://forge/o/r/actions/runs/9/jobs/57",
			"run_id": 9, "run_url": "http://forge/api/v1/repos/o/r/actions/runs/9", "name": "build", "labels": []string{"ubuntu-latest"},
			"run_attempt": 1, "head_sha": sha, "head_branch": "fix/issue-1", "status": "completed", "conclusion": "failure",
			"runner_id": 1, "runner_name": "runner-1", "steps": []map[string]any{{"name": "go build", "number": 1, "status": "completed", "conclusion": "failure"}},
			"created_at": "2026-12-01T10:00:00Z", "started_at": "2026-12-01T10:00:00Z", "completed_at": "2026-12-01T10:00:02Z"}
	}
	calls := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "token forge-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/v1/repos/o/r/actions/jobs/57":
			_ = json.NewEncoder(w).Encode(job(57, headSHA))
		case "/api/v1/repos/o/r/actions/jobs/58":
			_ = json.NewEncoder(w).Encode(job(58, "0000000000000000000000000000000000000000"))
		case "/api/v1/repos/o/r/actions/jobs/57/logs":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="ci-build-12.log"`)
			_, _ = w.Write([]byte(logs))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":["job not found"],"message":"job not found","url":"http://forge/api/swagger"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

func actionsRepo(t *testing.T, url string) *forge.RepoClient {
	t.Helper()
	c, err := forge.New(forge.Options{URL: url, Token: "forge-token", User: "dev-bot", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c.Repo("o", "r")
}

func actionsStatus(srvURL string, job int) forge.CombinedStatus {
	return forge.CombinedStatus{SHA: headSHA, State: forge.CIFailure, Statuses: []forge.CommitStatus{
		{Context: "ci / lint (push)", State: forge.CISuccess, TargetURL: srvURL + "/o/r/actions/runs/9/jobs/56"},
		{Context: "ci / build (pull_request)", State: forge.CIFailure, Description: "Failing after 2s",
			TargetURL: srvURL + "/o/r/actions/runs/9/jobs/" + strconv.Itoa(job)},
	}}
}

func TestActionsLog(t *testing.T) {
	srv, _ := giteaActions(t)
	src := cilog.New(cilog.Options{Actions: actionsRepo(t, srv.URL)})
	l, err := src.Fetch(context.Background(), actionsStatus(srv.URL, 57))
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != cilog.SourceActions || l.Job != "job ci / build (pull_request)" || !strings.HasSuffix(l.URL, "/runs/9/jobs/57") {
		t.Fatalf("log %+v", l)
	}
	if !strings.Contains(l.Text, "\n./widget.go:12:2: undefined: frobnicateWidgetZ7\n") || strings.Contains(l.Text, "2026-12-01T") {
		t.Fatalf("text %q", l.Text)
	}
	if !strings.Contains(l.Text, "❌ Failure - Main go build") {
		t.Fatalf("text lost its last line: %q", l.Text)
	}
}

func TestActionsLogFallsBack(t *testing.T) {
	srv, calls := giteaActions(t)
	src := cilog.New(cilog.Options{Actions: actionsRepo(t, srv.URL)})
	for _, tc := range []struct {
		name string
		cs   forge.CombinedStatus
	}{
		{"job of another commit", actionsStatus(srv.URL, 58)},
		{"no such job (a Forgejo run index, Actions off)", actionsStatus(srv.URL, 3)},
		{"not an Actions status", forge.CombinedStatus{SHA: headSHA, State: forge.CIFailure, Statuses: []forge.CommitStatus{
			{Context: "ci/woodpecker", State: forge.CIFailure, TargetURL: "http://wp/repos/3/pipeline/14"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := src.Fetch(context.Background(), tc.cs)
			if err != nil || l.Found() || l.Report() != "" {
				t.Fatalf("log %+v, err %v", l, err)
			}
		})
	}
	before := calls.Load()
	if l, err := src.Fetch(context.Background(), forge.CombinedStatus{SHA: headSHA, State: forge.CISuccess,
		Statuses: []forge.CommitStatus{{Context: "ci", State: forge.CISuccess, TargetURL: srv.URL + "/o/r/actions/runs/9/jobs/57"}}}); err != nil || l.Found() {
		t.Fatalf("green: %+v %v", l, err)
	}
	if calls.Load() != before {
		t.Fatal("a green head's logs were read")
	}
}

func TestActionsLogErrors(t *testing.T) {
	srv, _ := giteaActions(t)
	c, err := forge.New(forge.Options{URL: srv.URL, Token: "bad-token-0003", User: "dev-bot", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cilog.New(cilog.Options{Actions: c.Repo("o", "r")}).Fetch(context.Background(), actionsStatus(srv.URL, 57))
	if err == nil || !strings.Contains(err.Error(), "/repos/o/r/actions/jobs/57") || strings.Contains(err.Error(), "bad-token-0003") {
		t.Fatalf("err %v", err)
	}
}

// TestWoodpeckerFirst: with both sources, Woodpecker's log wins and the
// forge is not asked.
func TestWoodpeckerFirst(t *testing.T) {
	var rec recorded
	wp := rec.start(t)
	srv, calls := giteaActions(t)
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, wp.URL, wpToken), Actions: actionsRepo(t, srv.URL)})
	l, err := src.Fetch(context.Background(), actionsStatus(srv.URL, 57))
	if err != nil || l.Source != cilog.SourceWoodpecker || calls.Load() != 0 {
		t.Fatalf("log %+v err %v, %d forge calls", l, err, calls.Load())
	}
	// A Woodpecker that fails leaves the Actions log, with its error.
	bad := cilog.New(cilog.Options{Woodpecker: newWP(t, wp.URL, "nope"), Actions: actionsRepo(t, srv.URL)})
	l, err = bad.Fetch(context.Background(), actionsStatus(srv.URL, 57))
	if err == nil || l.Source != cilog.SourceActions {
		t.Fatalf("log %+v err %v", l, err)
	}
}

func TestNilSource(t *testing.T) {
	var s *cilog.Source
	if l, err := s.Fetch(context.Background(), actionsStatus("http://forge", 57)); err != nil || l.Found() {
		t.Fatalf("nil source: %+v %v", l, err)
	}
}
