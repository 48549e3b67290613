package cilog_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/cilog/cilogtest"
	"github.com/disinto/disinto/lib/forge"
)

const (
	headSHA = "4b1d2c3e5f60718293a4b5c6d7e8f90123456789"
	wpToken = "wp-secret-token-0001"
)

// recorded serves the responses under testdata/woodpecker, recorded in
// the shape of Woodpecker 3's API, and remembers every request.
type recorded struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rec *recorded) start(t *testing.T) *httptest.Server {
	files := map[string]string{
		"/api/repos/3/pipelines?page=1&perPage=50": "pipelines_page1.json",
		"/api/repos/3/pipelines?page=2&perPage=50": "pipelines_page2.json",
		"/api/repos/3/pipelines/14":                "pipeline_14.json",
		"/api/repos/3/logs/14/45":                  "logs_14_45.json",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r)
		rec.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+wpToken {
			http.Error(w, "token "+r.Header.Get("Authorization")+" rejected", http.StatusUnauthorized)
			return
		}
		f, ok := files[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := os.ReadFile("testdata/woodpecker/" + f)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func failed(sha string) forge.CombinedStatus {
	return forge.CombinedStatus{SHA: sha, State: forge.CIFailure, Statuses: []forge.CommitStatus{
		{Context: "ci/woodpecker/pr/test", State: forge.CIFailure, Description: "Pipeline failed", TargetURL: "http://wp/repos/3/pipeline/14"}}}
}

func newWP(t *testing.T, url, token string) *cilog.Woodpecker {
	t.Helper()
	w, err := cilog.NewWoodpecker(cilog.WoodpeckerOptions{Server: url, Token: token, RepoID: 3})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWoodpeckerRecorded(t *testing.T) {
	var rec recorded
	srv := rec.start(t)
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, srv.URL+"/", wpToken)})
	l, err := src.Fetch(context.Background(), failed(headSHA))
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != cilog.SourceWoodpecker || l.Job != "pipeline 14" || l.URL != srv.URL+"/repos/3/pipeline/14" {
		t.Fatalf("log %+v", l)
	}
	if len(l.Steps) != 1 || l.Steps[0] != (cilog.Step{Name: "build", ExitCode: 2}) {
		t.Fatalf("steps %+v", l.Steps)
	}
	for _, want := range []string{"./widget.go:12:2: undefined: frobnicateWidgetZ7", "exit status 1", "--- step build (failure, exit code 2)"} {
		if !strings.Contains(l.Text, want) {
			t.Errorf("log lacks %q:\n%s", want, l.Text)
		}
	}
	if strings.Contains(l.Text, "progress 50%") {
		t.Error("progress entries are not log lines")
	}
	rep := l.Report()
	if !strings.HasPrefix(rep, "Log of pipeline 14 (woodpecker; step build exited 2):\n") {
		t.Errorf("report %q", rep)
	}
	// The steps that did not fail are not read; the token went only in
	// the header.
	var paths []string
	for _, r := range rec.reqs {
		paths = append(paths, r.URL.RequestURI())
		if strings.Contains(r.URL.String(), wpToken) {
			t.Errorf("token in URL %s", r.URL)
		}
	}
	want := "/api/repos/3/pipelines?page=1&perPage=50 /api/repos/3/pipelines?page=2&perPage=50 /api/repos/3/pipelines/14 /api/repos/3/logs/14/45"
	if strings.Join(paths, " ") != want {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(paths, " "), want)
	}
}

func TestWoodpeckerBudget(t *testing.T) {
	var rec recorded
	srv := rec.start(t)
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, srv.URL, wpToken), Budget: 60})
	l, err := src.Fetch(context.Background(), failed(headSHA))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Cut || len(l.Text) > 60 || !strings.HasSuffix(l.Text, "exit status 1\n2") {
		t.Fatalf("cut %v, text %q", l.Cut, l.Text)
	}
}

func TestWoodpeckerNoPipeline(t *testing.T) {
	var rec recorded
	srv := rec.start(t)
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, srv.URL, wpToken)})
	l, err := src.Fetch(context.Background(), failed("ffffffffffffffffffffffffffffffffffffffff"))
	if err != nil || l.Found() {
		t.Fatalf("log %+v, err %v", l, err)
	}
}

func TestWoodpeckerErrorsNameTheURLNotTheToken(t *testing.T) {
	var rec recorded
	srv := rec.start(t)
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, srv.URL, "wrong-token-0002")})
	l, err := src.Fetch(context.Background(), failed(headSHA))
	var he *cilog.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusUnauthorized || l.Found() {
		t.Fatalf("log %+v, err %v", l, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, srv.URL+"/api/repos/3/pipelines?page=1&perPage=50") || strings.Contains(msg, "wrong-token-0002") {
		t.Fatalf("error %q", msg)
	}
	srv.Close()
	_, err = src.Fetch(context.Background(), failed(headSHA))
	if err == nil || !strings.Contains(err.Error(), srv.URL) || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("unreachable server: %v", err)
	}
}

func TestNewWoodpeckerValidates(t *testing.T) {
	for _, o := range []cilog.WoodpeckerOptions{
		{Server: "woodpecker:8000", Token: "t", RepoID: 1},
		{Server: "http://u:p@woodpecker:8000", Token: "t", RepoID: 1},
		{Server: "http://woodpecker:8000", RepoID: 1},
		{Server: "http://woodpecker:8000", Token: "t"},
	} {
		if _, err := cilog.NewWoodpecker(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestWoodpeckerStandIn holds the stand-in server of cilogtest, which
// the end-to-end tests use, to the same client.
func TestWoodpeckerStandIn(t *testing.T) {
	wp := cilogtest.StartWoodpecker(t, 3, wpToken)
	wp.AddPipeline(1, headSHA, cilogtest.Step{Name: "clone", State: "success"},
		cilogtest.Step{Name: "test", State: "failure", ExitCode: 1, Log: []string{"--- FAIL: TestX", "FAIL"}})
	wp.AddPipeline(2, "other", cilogtest.Step{Name: "test", State: "success"})
	l, err := cilog.New(cilog.Options{Woodpecker: newWP(t, wp.URL, wpToken)}).Fetch(context.Background(), failed(headSHA))
	if err != nil || l.Job != "pipeline 1" || !strings.Contains(l.Text, "--- FAIL: TestX\nFAIL") || len(l.Steps) != 1 {
		t.Fatalf("log %+v, err %v", l, err)
	}
}

// TestWoodpeckerLinkedPipeline: a head whose pipeline is past the pages
// read is found from the status's link, and only if it built the head.
func TestWoodpeckerLinkedPipeline(t *testing.T) {
	wp := cilogtest.StartWoodpecker(t, 3, wpToken)
	wp.AddPipeline(1, headSHA, cilogtest.Step{Name: "build", State: "failure", ExitCode: 2, Log: []string{"old.go:1:1: syntax error"}})
	for n := int64(2); n <= 300; n++ {
		wp.AddPipeline(n, "other")
	}
	src := cilog.New(cilog.Options{Woodpecker: newWP(t, wp.URL, wpToken)})
	cs := func(target string) forge.CombinedStatus {
		return forge.CombinedStatus{SHA: headSHA, State: forge.CIFailure, Statuses: []forge.CommitStatus{
			{Context: "ci/woodpecker/pr/test", State: forge.CIFailure, TargetURL: target}}}
	}
	l, err := src.Fetch(context.Background(), cs(wp.URL+"/repos/3/pipeline/1/2"))
	if err != nil || l.Job != "pipeline 1" || !strings.Contains(l.Text, "old.go:1:1: syntax error") {
		t.Fatalf("log %+v, err %v", l, err)
	}
	if got := wp.Requests("/api/repos/3/pipelines"); got != 5 {
		t.Errorf("%d list pages read, want the cap of 5", got)
	}
	for _, target := range []string{wp.URL + "/repos/3/pipeline/7", wp.URL + "/repos/4/pipeline/1", ""} {
		if l, err := src.Fetch(context.Background(), cs(target)); err != nil || l.Found() {
			t.Errorf("target %q: log %+v, err %v", target, l, err)
		}
	}
}
