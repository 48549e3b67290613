// Package cilogtest serves a stand-in for a Woodpecker server's API, in
// the shape of the real one (fields and routes of Woodpecker 3's
// server/model and server/router), for tests of code that reads CI logs.
// Import it only from _test.go files.
package cilogtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Step is a step of a stand-in pipeline.
type Step struct {
	Name     string
	State    string // success, failure, error, killed, skipped
	ExitCode int
	Log      []string
}

// Woodpecker is a running stand-in server for one repository id.
type Woodpecker struct {
	// URL is the server's base URL.
	URL string
	// Token is the bearer token every request must send.
	Token  string
	RepoID int64

	mu        sync.Mutex
	pipelines map[int64]pipeline
	nextStep  int64
	// Requests counts the API requests served, by path.
	requests map[string]int
}

type pipeline struct {
	number int64
	commit string
	status string
	steps  []stepRec
}

type stepRec struct {
	id int64
	Step
}

// StartWoodpecker starts a stand-in server for repoID that accepts token;
// it stops when t ends.
func StartWoodpecker(t testing.TB, repoID int64, token string) *Woodpecker {
	t.Helper()
	w := &Woodpecker{Token: token, RepoID: repoID, pipelines: map[int64]pipeline{}, nextStep: 40, requests: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	w.URL = srv.URL
	return w
}

// AddPipeline records pipeline number for commit with steps; the
// pipeline's status is failure when a step failed, else success.
func (w *Woodpecker) AddPipeline(number int64, commit string, steps ...Step) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := pipeline{number: number, commit: commit, status: "success"}
	for _, s := range steps {
		w.nextStep++
		p.steps = append(p.steps, stepRec{id: w.nextStep, Step: s})
		if s.State == "failure" || s.State == "error" || s.State == "killed" {
			p.status = "failure"
		}
	}
	w.pipelines[number] = p
}

// Requests returns how many requests were served for path.
func (w *Woodpecker) Requests(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests[path]
}

func (w *Woodpecker) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests[r.URL.Path]++
	if r.Header.Get("Authorization") != "Bearer "+w.Token {
		http.Error(rw, "Unauthorized", http.StatusUnauthorized)
		return
	}
	prefix := fmt.Sprintf("/api/repos/%d/", w.RepoID)
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok || r.Method != http.MethodGet {
		http.NotFound(rw, r)
		return
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 1 && parts[0] == "pipelines":
		w.list(rw, r)
	case len(parts) == 2 && parts[0] == "pipelines":
		n, _ := strconv.ParseInt(parts[1], 10, 64)
		p, ok := w.pipelines[n]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		writeJSON(rw, w.pipelineJSON(p, true))
	case len(parts) == 3 && parts[0] == "logs":
		n, _ := strconv.ParseInt(parts[1], 10, 64)
		id, _ := strconv.ParseInt(parts[2], 10, 64)
		w.logs(rw, r, n, id)
	default:
		http.NotFound(rw, r)
	}
}

// list serves GET /api/repos/{id}/pipelines newest first, 50 a page.
func (w *Woodpecker) list(rw http.ResponseWriter, r *http.Request) {
	var nums []int64
	for n := range w.pipelines {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	per, _ := strconv.Atoi(r.URL.Query().Get("perPage"))
	if page < 1 {
		page = 1
	}
	if per < 1 || per > 50 {
		per = 50
	}
	out := []map[string]any{}
	for i := (page - 1) * per; i < len(nums) && i < page*per; i++ {
		out = append(out, w.pipelineJSON(w.pipelines[nums[i]], false))
	}
	writeJSON(rw, out)
}

// logs serves GET /api/repos/{id}/logs/{number}/{step_id}: log entries
// whose data is base64, as []byte marshals.
func (w *Woodpecker) logs(rw http.ResponseWriter, r *http.Request, n, id int64) {
	p, ok := w.pipelines[n]
	if !ok {
		http.NotFound(rw, r)
		return
	}
	for _, s := range p.steps {
		if s.id != id {
			continue
		}
		out := []map[string]any{}
		for i, ln := range s.Log {
			out = append(out, map[string]any{"id": id*1000 + int64(i), "step_id": id, "time": i, "line": i, "data": []byte(ln), "type": 0})
		}
		writeJSON(rw, out)
		return
	}
	http.NotFound(rw, r)
}

func (w *Woodpecker) pipelineJSON(p pipeline, tree bool) map[string]any {
	m := map[string]any{"id": 100 + p.number, "number": p.number, "author": "dev-bot", "parent": 0, "event": "pull_request",
		"status": p.status, "errors": nil, "created": 1764580000, "updated": 1764580100, "started": 1764580010, "finished": 1764580090,
		"commit": p.commit, "branch": "main", "ref": "refs/pull/1/head", "message": "change", "version": "3.9.0"}
	if !tree {
		return m
	}
	var children []map[string]any
	for i, s := range p.steps {
		children = append(children, map[string]any{"id": s.id, "uuid": fmt.Sprintf("uuid-%d", s.id), "pipeline_id": 100 + p.number,
			"pid": i + 2, "ppid": 1, "name": s.Name, "state": s.State, "exit_code": s.ExitCode, "type": "commands"})
	}
	m["workflows"] = []map[string]any{{"id": 30, "pipeline_id": 100 + p.number, "pid": 1, "name": "ci", "state": p.status, "children": children}}
	return m
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(v)
}
