package forge

import (
	"context"
	"fmt"
	"net/http"
)

// ActionsJob is one job of an Actions workflow run.
type ActionsJob struct {
	ID, RunID int64
	Name      string
	// HeadSHA is the commit the job ran on.
	HeadSHA string
	// Status is queued, in_progress or completed; Conclusion, once
	// completed, success, failure, cancelled or skipped.
	Status, Conclusion string
	HTMLURL            string
}

// wireActionsJob is the part of Gitea's ActionWorkflowJob
// (modules/structs/repo_actions.go) read here; the SDK has no such call.
type wireActionsJob struct {
	ID         int64  `json:"id"`
	RunID      int64  `json:"run_id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	HTMLURL    string `json:"html_url"`
}

// ActionsJob returns Actions job id of the repository
// (GET /repos/{owner}/{repo}/actions/jobs/{id}, Gitea 1.24 and later).
// It wraps ErrNotFound when the job does not exist, when Actions are
// disabled, and on forges without the endpoint. Forgejo serves the jobs
// API from version 16 only; before that this is ErrNotFound.
func (r *RepoClient) ActionsJob(ctx context.Context, id int64) (ActionsJob, error) {
	var w wireActionsJob
	if err := r.c.do(ctx, http.MethodGet, r.path("/actions/jobs/%d", id), nil, nil, &w); err != nil {
		return ActionsJob{}, fmt.Errorf("actions job %d of %s: %w", id, r.slug, err)
	}
	return ActionsJob(w), nil
}

// ActionsJobLogs returns the whole log of Actions job id as the forge
// stores it (GET /repos/{owner}/{repo}/actions/jobs/{id}/logs): plain
// text, one "<RFC 3339 timestamp> <text>" line per output line. It wraps
// ErrNotFound when the job does not exist, has not started, its logs
// expired, Actions are disabled, or the forge lacks the endpoint (Forgejo
// before 16, Gitea before 1.24).
func (r *RepoClient) ActionsJobLogs(ctx context.Context, id int64) (string, error) {
	var body []byte
	if err := r.c.do(ctx, http.MethodGet, r.path("/actions/jobs/%d/logs", id), nil, nil, &body); err != nil {
		return "", fmt.Errorf("logs of actions job %d of %s: %w", id, r.slug, err)
	}
	return string(body), nil
}
