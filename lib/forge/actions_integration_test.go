package forge_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// TestActionsJobsAbsent: a forge that serves no Actions (the test server
// runs with [actions] ENABLED = false, as a Forgejo before 16 lacks the
// jobs API) answers the job and log calls with ErrNotFound, which is
// what lets a caller fall back to the statuses.
func TestActionsJobsAbsent(t *testing.T) {
	srv := gitea.Get(t)
	u := srv.NewUser(t, "actions")
	r := srv.NewRepo(t, u, "actions")
	ctx := ctxFor(t)
	if _, err := r.ActionsJob(ctx, 1); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("ActionsJob: %v, want ErrNotFound", err)
	}
	_, err := r.ActionsJobLogs(ctx, 1)
	if !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("ActionsJobLogs: %v, want ErrNotFound", err)
	}
	var se *forge.StatusError
	if !errors.As(err, &se) || se.Path != "/repos/"+r.Slug()+"/actions/jobs/1/logs" {
		t.Fatalf("error %v does not name the call", err)
	}
}

// ciWorkflow is a workflow with one job that runs on every push.
const ciWorkflow = `on: [push, pull_request]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: go build ./...
`

// TestActionsJobLogs runs a job on a server with Actions and a runner,
// and reads it back as the dev agent does: the commit status the server
// posts links the job, whose head and log come from the jobs API.
func TestActionsJobLogs(t *testing.T) {
	srv := forgetest.StartWith(t, forgetest.Options{Actions: true})
	runner := srv.NewRunner(t, "ubuntu-latest")
	u := srv.NewUser(t, "actions")
	r := srv.NewRepo(t, u, "actions")
	ctx := ctxFor(t)
	if _, err := r.PutFile(ctx, forge.FileChange{Path: ".gitea/workflows/ci.yml", Content: []byte(ciWorkflow), Branch: "main", Message: "ci"}); err != nil {
		t.Fatal(err)
	}
	task := runner.Next(t, 2*time.Minute)
	log := []string{"go build ./...", "./widget.go:12:2: undefined: frobnicate", "exit status 1"}
	runner.Finish(t, task, log, true)

	cs, err := r.CombinedStatus(ctx, task.SHA)
	if err != nil {
		t.Fatal(err)
	}
	if cs.State != forge.CIFailure || len(cs.Statuses) != 1 {
		t.Fatalf("combined status %+v", cs)
	}
	target := cs.Statuses[0].TargetURL
	m := regexp.MustCompile(`/actions/runs/(\d+)/jobs/(\d+)$`).FindStringSubmatch(target)
	if m == nil {
		t.Fatalf("status target %q does not link an Actions job", target)
	}
	id, _ := strconv.ParseInt(m[2], 10, 64)
	job, err := r.ActionsJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != id || job.HeadSHA != task.SHA || job.Name != "build" || job.Conclusion != "failure" || fmt.Sprint(job.RunID) != m[1] {
		t.Fatalf("job %+v, status target %s", job, target)
	}
	text, err := r.ActionsJobLogs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) != len(log) {
		t.Fatalf("log %q", text)
	}
	for i, ln := range lines {
		// Each stored line is "<timestamp> <text>".
		if _, rest, _ := strings.Cut(ln, " "); rest != log[i] {
			t.Fatalf("line %d = %q, want text %q", i, ln, log[i])
		}
	}
	if _, err := r.ActionsJobLogs(ctx, id+1000); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("logs of a missing job: %v", err)
	}
}
