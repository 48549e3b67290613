package cilog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// Woodpecker API paging: the server serves at most 50 items a page
// (server/router/middleware/session/pagination.go); pipelines come newest
// first, so the head's pipeline is on the first pages.
const (
	wpPerPage  = 50
	wpMaxPages = 5
	// wpTimeout bounds one request, body included (the reference gave a
	// log fetch 15 s).
	wpTimeout = 15 * time.Second
	// wpMaxBody bounds what one response may hold.
	wpMaxBody = 32 << 20
)

// Step states of a failed Woodpecker step (server/model/const.go).
var wpFailed = map[string]bool{"failure": true, "error": true, "killed": true}

// Woodpecker log entry types (server/model/log.go LogEntryType): stdout,
// stderr and exit code lines are the log; metadata and progress are not.
const (
	wpLogStdout   = 0
	wpLogStderr   = 1
	wpLogExitCode = 2
)

// WoodpeckerOptions configures a Woodpecker client.
type WoodpeckerOptions struct {
	// Server is the server's base URL, e.g. http://woodpecker:8000.
	Server string
	// Token is a personal access token, sent only as a bearer header.
	Token string
	// RepoID is the repository's id on the server (ci.woodpecker_repo_id).
	RepoID int64
	// HTTPClient is the base client; a zero Timeout means 15 s.
	HTTPClient *http.Client
}

// Woodpecker reads pipelines and step logs from a Woodpecker server's API.
type Woodpecker struct {
	base   string
	token  string
	repoID int64
	http   *http.Client
}

// HTTPError is a Woodpecker API call that answered with an error status.
// URL never holds a token.
type HTTPError struct {
	URL     string
	Status  int
	Message string
}

// Error names the call and the status.
func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("woodpecker GET %s: HTTP %d", e.URL, e.Status)
	}
	return fmt.Sprintf("woodpecker GET %s: HTTP %d: %s", e.URL, e.Status, e.Message)
}

// NewWoodpecker validates o and returns a client. It does not contact the
// server.
func NewWoodpecker(o WoodpeckerOptions) (*Woodpecker, error) {
	u, err := url.Parse(o.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("woodpecker server %q: must be an absolute http(s) URL without credentials", o.Server)
	}
	if o.Token == "" {
		return nil, errors.New("woodpecker: token required")
	}
	if o.RepoID <= 0 {
		return nil, fmt.Errorf("woodpecker: repo id %d: must be positive", o.RepoID)
	}
	hc := http.Client{}
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	}
	if hc.Timeout <= 0 {
		hc.Timeout = wpTimeout
	}
	return &Woodpecker{base: strings.TrimSuffix(o.Server, "/"), token: o.Token, repoID: o.RepoID, http: &hc}, nil
}

// wpPipeline is the part of a Woodpecker pipeline (server/model/pipeline.go)
// read here.
type wpPipeline struct {
	Number    int64  `json:"number"`
	Commit    string `json:"commit"`
	Status    string `json:"status"`
	Workflows []struct {
		Name     string   `json:"name"`
		State    string   `json:"state"`
		Error    string   `json:"error"`
		Children []wpStep `json:"children"`
	} `json:"workflows"`
	Errors []struct {
		Type      string `json:"type"`
		Message   string `json:"message"`
		IsWarning bool   `json:"is_warning"`
	} `json:"errors"`
}

// wpStep is a step of a workflow (server/model/step.go); its id is what
// the log endpoint takes.
type wpStep struct {
	ID       int64  `json:"id"`
	PID      int    `json:"pid"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// wpLogEntry is one log line (server/model/log.go); Data is base64 in the
// JSON, which encoding/json decodes into the bytes.
type wpLogEntry struct {
	Line int    `json:"line"`
	Data []byte `json:"data"`
	Type int    `json:"type"`
}

// wpTarget matches the pipeline link Woodpecker puts in the commit
// statuses it posts: <server>/repos/<repo id>/pipeline/<number>[/<step>].
var wpTarget = regexp.MustCompile(`/repos/(\d+)/pipeline/(\d+)(/\d+)?/?$`)

// fetch returns the log of the failed steps of the newest pipeline of
// sha, or a Log that is not Found when there is none. The pipeline is
// looked up by commit; when it is not on the first pages, a failing
// status's link names it, and it counts only if it built sha.
func (w *Woodpecker) fetch(ctx context.Context, sha string, failed []forge.CommitStatus, budget int) (Log, error) {
	num, err := w.pipelineOf(ctx, sha)
	if err != nil {
		return Log{}, err
	}
	var p wpPipeline
	if num == 0 {
		if num = w.linked(failed); num == 0 {
			return Log{}, nil
		}
		if err := w.get(ctx, fmt.Sprintf("/api/repos/%d/pipelines/%d", w.repoID, num), nil, &p); err != nil {
			return Log{}, err
		}
		if !strings.EqualFold(p.Commit, sha) {
			return Log{}, nil
		}
	} else if err := w.get(ctx, fmt.Sprintf("/api/repos/%d/pipelines/%d", w.repoID, num), nil, &p); err != nil {
		return Log{}, err
	}
	l := Log{Source: SourceWoodpecker, Job: fmt.Sprintf("pipeline %d", num),
		URL: fmt.Sprintf("%s/repos/%d/pipeline/%d", w.base, w.repoID, num)}
	var b strings.Builder
	for _, e := range p.Errors {
		if !e.IsWarning {
			fmt.Fprintf(&b, "pipeline error [%s]: %s\n", e.Type, e.Message)
		}
	}
	for _, wf := range p.Workflows {
		if wf.Error != "" {
			fmt.Fprintf(&b, "workflow %s: %s\n", wf.Name, wf.Error)
		}
		for _, s := range wf.Children {
			if !wpFailed[s.State] || len(l.Steps) >= maxJobs {
				continue
			}
			l.Steps = append(l.Steps, Step{Name: s.Name, ExitCode: s.ExitCode})
			fmt.Fprintf(&b, "--- step %s (%s, exit code %d)\n", s.Name, s.State, s.ExitCode)
			if s.Error != "" {
				fmt.Fprintf(&b, "step error: %s\n", s.Error)
			}
			if err := w.stepLog(ctx, num, s.ID, &b); err != nil {
				return Log{}, err
			}
		}
	}
	l.Text, l.Cut = Tail(b.String(), budget)
	return l, nil
}

// linked returns the pipeline number a failing status of this
// repository links, or 0.
func (w *Woodpecker) linked(failed []forge.CommitStatus) int64 {
	for _, st := range failed {
		u, err := url.Parse(st.TargetURL)
		if err != nil {
			continue
		}
		m := wpTarget.FindStringSubmatch(u.Path)
		if m == nil || m[1] != strconv.FormatInt(w.repoID, 10) {
			continue
		}
		if n, err := strconv.ParseInt(m[2], 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// pipelineOf returns the number of the newest pipeline built for sha, or
// 0 when none is on the first pages.
func (w *Woodpecker) pipelineOf(ctx context.Context, sha string) (int64, error) {
	for page := 1; page <= wpMaxPages; page++ {
		var ps []wpPipeline
		q := url.Values{"page": {fmt.Sprint(page)}, "perPage": {fmt.Sprint(wpPerPage)}}
		if err := w.get(ctx, fmt.Sprintf("/api/repos/%d/pipelines", w.repoID), q, &ps); err != nil {
			return 0, err
		}
		var best int64
		for _, p := range ps {
			if strings.EqualFold(p.Commit, sha) && p.Number > best {
				best = p.Number
			}
		}
		if best > 0 || len(ps) < wpPerPage {
			return best, nil
		}
	}
	return 0, nil
}

// stepLog appends the log lines of step id of pipeline num to b.
func (w *Woodpecker) stepLog(ctx context.Context, num, id int64, b *strings.Builder) error {
	var entries []wpLogEntry
	if err := w.get(ctx, fmt.Sprintf("/api/repos/%d/logs/%d/%d", w.repoID, num, id), nil, &entries); err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Type {
		case wpLogStdout, wpLogStderr, wpLogExitCode:
			b.Write(e.Data)
			if len(e.Data) == 0 || e.Data[len(e.Data)-1] != '\n' {
				b.WriteByte('\n')
			}
		}
	}
	return nil
}

// get sends one authenticated GET and decodes the JSON answer into out.
func (w *Woodpecker) get(ctx context.Context, path string, q url.Values, out any) error {
	u := w.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("woodpecker GET %s: %w", u, err)
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Accept", "application/json")
	resp, err := w.http.Do(req)
	if err != nil {
		// url.Error repeats the URL, which holds no secret.
		return fmt.Errorf("woodpecker: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, wpMaxBody))
	if err != nil {
		return fmt.Errorf("woodpecker GET %s: read: %w", u, err)
	}
	if resp.StatusCode >= 400 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &HTTPError{URL: u, Status: resp.StatusCode, Message: strings.ReplaceAll(msg, w.token, "***")}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("woodpecker GET %s: decode: %w", u, err)
	}
	return nil
}
