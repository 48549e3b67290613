package cilog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// actionsTarget matches the target URL of a commit status posted by the
// forge's Actions: <repo link>/actions/runs/<run>/jobs/<job>. Gitea 1.26
// puts the run's and the job's ids there (services/actions/commit_status.go),
// as a path relative to the forge. Older Gitea and Forgejo may put the
// run's index and the job's position in the run, which the jobs API does
// not take, so the job the number names is checked against the head
// before its log is read. Forgejo serves the jobs API from version 16;
// before that every call is not found and the statuses are all there is.
var actionsTarget = regexp.MustCompile(`/actions/runs/(\d+)/jobs/(\d+)/?$`)

// gitea's log timestamp (modules/actions/log.go timeFormat).
const actionsTimeFormat = "2006-01-02T15:04:05.0000000Z07:00"

// actionsLog reads the logs of the Actions jobs behind the failing
// statuses of sha. A forge without Actions job logs (ErrNotFound) has
// none, which is no error.
func actionsLog(ctx context.Context, api ActionsAPI, sha string, failed []forge.CommitStatus, budget int) (Log, error) {
	var b strings.Builder
	var jobs []string
	l := Log{Source: SourceActions}
	for _, st := range failed {
		id, ok := actionsJobID(st.TargetURL)
		if !ok || len(jobs) >= maxJobs {
			continue
		}
		job, err := api.ActionsJob(ctx, id)
		if errors.Is(err, forge.ErrNotFound) {
			continue
		}
		if err != nil {
			return Log{}, err
		}
		if job.HeadSHA != "" && !strings.EqualFold(job.HeadSHA, sha) {
			// The number is not this head's job (a run index, say).
			continue
		}
		text, err := api.ActionsJobLogs(ctx, id)
		if errors.Is(err, forge.ErrNotFound) {
			continue
		}
		if err != nil {
			return Log{}, err
		}
		name := st.Context
		if name == "" {
			name = job.Name
		}
		jobs = append(jobs, name)
		if l.URL == "" {
			l.URL = st.TargetURL
		}
		fmt.Fprintf(&b, "--- job %s (%s)\n%s\n", name, job.Conclusion, stripTimestamps(text))
	}
	if len(jobs) == 0 {
		return Log{}, nil
	}
	l.Job = "job " + strings.Join(jobs, ", ")
	l.Text, l.Cut = Tail(b.String(), budget)
	return l, nil
}

// actionsJobID reads the job number from an Actions status target URL.
func actionsJobID(target string) (int64, bool) {
	u, err := url.Parse(target)
	if err != nil {
		return 0, false
	}
	m := actionsTarget.FindStringSubmatch(u.Path)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(m[2], 10, 64)
	return id, err == nil && id > 0
}

// stripTimestamps drops the timestamp the forge stores before each log
// line, which costs budget and tells the model nothing.
func stripTimestamps(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, ln := range lines {
		ts, rest, ok := strings.Cut(ln, " ")
		if !ok {
			if _, err := time.Parse(actionsTimeFormat, ln); err == nil {
				lines[i] = ""
			}
			continue
		}
		if _, err := time.Parse(actionsTimeFormat, ts); err == nil {
			lines[i] = rest
		} else if _, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "\n")
}
