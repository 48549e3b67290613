package forgetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ActionsRunner is an Actions runner for a server started with Actions: it
// speaks Gitea's runner protocol (runner.v1.RunnerService over Connect's
// JSON encoding, as act_runner does) to register, take a job and report
// its log and result, but runs nothing: the test says what the job
// printed. Everything else (creating jobs from workflows, commit statuses,
// storing logs, the jobs API) is the real server's.
type ActionsRunner struct {
	s      *Server
	uuid   string
	token  string
	labels []string
	// version is the tasks version the server last reported.
	version int64
}

// Task is a job the runner took.
type Task struct {
	ID int64
	// SHA is the commit the job runs on.
	SHA string
	// Job is the job's name in the workflow.
	Job string
}

// NewRunner registers a runner with labels (e.g. "ubuntu-latest") for
// every repository of s, with a registration token from the server's own
// CLI.
func (s *Server) NewRunner(t testing.TB, labels ...string) *ActionsRunner {
	t.Helper()
	ctx := testCtx(t)
	out, err := s.run(ctx, "actions", "generate-runner-token")
	if err != nil {
		t.Fatalf("gitea actions generate-runner-token: %v: %s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		t.Fatal("gitea actions generate-runner-token: no token")
	}
	r := &ActionsRunner{s: s, labels: labels}
	var resp struct {
		Runner struct {
			UUID  string `json:"uuid"`
			Token string `json:"token"`
		} `json:"runner"`
	}
	req := map[string]any{"name": s.Unique("runner"), "token": fields[len(fields)-1], "version": "disinto-forgetest", "labels": labels}
	if err := r.call(ctx, "Register", req, &resp); err != nil {
		t.Fatalf("register runner: %v", err)
	}
	r.uuid, r.token = resp.Runner.UUID, resp.Runner.Token
	return r
}

// Next waits until the server hands the runner a job, or fails t after
// timeout.
func (r *ActionsRunner) Next(t testing.TB, timeout time.Duration) Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var resp struct {
			Task *struct {
				ID      json.Number `json:"id"`
				Context struct {
					SHA string `json:"sha"`
					Job string `json:"job"`
				} `json:"context"`
			} `json:"task"`
			TasksVersion json.Number `json:"tasksVersion"`
		}
		err := r.call(ctx, "FetchTask", map[string]any{"tasksVersion": strconv.FormatInt(r.version, 10)}, &resp)
		if err != nil {
			t.Fatalf("fetch task: %v", err)
		}
		if v, err := resp.TasksVersion.Int64(); err == nil {
			r.version = v
		}
		if resp.Task != nil {
			id, err := resp.Task.ID.Int64()
			if err != nil {
				t.Fatalf("task id %q: %v", resp.Task.ID, err)
			}
			return Task{ID: id, SHA: resp.Task.Context.SHA, Job: resp.Task.Context.Job}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no Actions job within %s", timeout)
		case <-time.After(200 * time.Millisecond):
			// The server assigns jobs only when polled, as for a real
			// runner; there is nothing to wait on but the next poll.
		}
	}
}

// Finish reports task's log (one row per line, the job's only step) and
// its result: failed or not.
func (r *ActionsRunner) Finish(t testing.TB, task Task, log []string, failed bool) {
	t.Helper()
	ctx := testCtx(t)
	now := time.Now().UTC()
	rows := make([]map[string]any, len(log))
	for i, ln := range log {
		rows[i] = map[string]any{"time": now.Format(time.RFC3339Nano), "content": ln}
	}
	id := strconv.FormatInt(task.ID, 10)
	if err := r.call(ctx, "UpdateLog", map[string]any{"taskId": id, "index": "0", "rows": rows, "noMore": true}, nil); err != nil {
		t.Fatalf("update log: %v", err)
	}
	result := "RESULT_SUCCESS"
	if failed {
		result = "RESULT_FAILURE"
	}
	state := map[string]any{"id": id, "result": result, "startedAt": now.Format(time.RFC3339Nano), "stoppedAt": now.Format(time.RFC3339Nano),
		"steps": []map[string]any{{"id": "0", "result": result, "logIndex": "0", "logLength": strconv.Itoa(len(log)),
			"startedAt": now.Format(time.RFC3339Nano), "stoppedAt": now.Format(time.RFC3339Nano)}}}
	if err := r.call(ctx, "UpdateTask", map[string]any{"state": state}, nil); err != nil {
		t.Fatalf("update task: %v", err)
	}
}

// call sends one unary Connect request with a JSON body.
func (r *ActionsRunner) call(ctx context.Context, method string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	u := r.s.URL + "/api/actions/runner.v1.RunnerService/" + method
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	if r.uuid != "" {
		req.Header.Set("x-runner-uuid", r.uuid)
		req.Header.Set("x-runner-token", r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
