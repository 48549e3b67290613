package forge_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
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
