package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// laneOptions say how a lane system differs from the plain one.
type laneOptions struct {
	// localBots are NAME=LOGIN identities `disinto init --local-bot`
	// provisions.
	localBots []string
	// project rewrites the project file init wrote before the daemon
	// starts; it receives the file's text.
	project func(text string) string
	// env is extra daemon environment.
	env []string
	// dashboard keeps the project's dashboard issue on; off, the issues
	// the test files are numbered from 1, as its scenarios expect.
	dashboard bool
}

// bootLane is bootSystem with room for a project file of the test's
// own: init (with local bots), the edit, config check, the daemon.
func bootLane(t *testing.T, o laneOptions, scenarios ...claudetest.Scenario) *system {
	t.Helper()
	return bootWith(t, 30*time.Second, o, scenarios...)
}

// withCI sets ci.system of a project file init wrote.
func withCI(system string) func(string) string {
	return func(text string) string {
		return strings.Replace(text, "system = \"none\"", fmt.Sprintf("system = %q", system), 1)
	}
}

// then chains project file edits.
func then(edits ...func(string) string) func(string) string {
	return func(text string) string {
		for _, e := range edits {
			text = e(text)
		}
		return text
	}
}

// appendTOML appends tables to a project file.
func appendTOML(s string) func(string) string {
	return func(text string) string { return text + "\n" + s }
}

// watch returns the sysWatch of the system's project.
func (y *system) watch(t *testing.T) *sysWatch {
	return &sysWatch{t: t, ctx: testCtx(t), admin: y.srv.Admin(t).Repo("acme", "widgets"), died: y.died}
}

// devRecords returns the dev runs the ledger holds.
func (y *system) devRecords(t *testing.T) []ledger.Record {
	t.Helper()
	recs, _, err := ledger.Read(filepath.Join(y.Data, "ledger"), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Record
	for _, r := range recs {
		if r.Role == string(config.RoleDev) {
			out = append(out, r)
		}
	}
	return out
}

// statusJSON is the part of `disinto status --json` the lane tests read.
type statusJSON struct {
	Jobs []struct {
		Project string    `json:"project"`
		Role    string    `json:"role"`
		Next    time.Time `json:"next"`
	} `json:"jobs"`
	Backends []backendJSON `json:"backends"`
}

// backendJSON is one backend's health in `disinto status --json`.
type backendJSON struct {
	Backend   string `json:"backend"`
	Reachable bool   `json:"reachable"`
	Checked   string `json:"checked"`
	Error     string `json:"error"`
}

// hasJob reports whether the status lists a job of role.
func (s statusJSON) hasJob(role string) bool {
	for _, j := range s.Jobs {
		if j.Role == role {
			return true
		}
	}
	return false
}

// status runs `disinto status --json` against the running daemon.
func (y *system) status(t *testing.T) statusJSON {
	t.Helper()
	var st statusJSON
	out := y.MustRun(t, nil, "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// wantScheduledAfter fails t unless the running daemon's next run of role
// is more than d away.
func (y *system) wantScheduledAfter(t *testing.T, role string, d time.Duration) {
	t.Helper()
	st := y.status(t)
	for _, j := range st.Jobs {
		if j.Role == role && time.Until(j.Next) > d {
			return
		}
	}
	t.Errorf("the daemon does not schedule the %s more than %s out: %+v", role, d, st.Jobs)
}

// issue reads issue n as the admin.
func (w *sysWatch) issue(n int64) forge.Issue {
	w.t.Helper()
	i, err := w.admin.GetIssue(w.ctx, n)
	if err != nil {
		w.t.Fatal(err)
	}
	return i
}

// laneImplement is a session turn that adds a file of its own issue
// (work-<N>.txt), so independent issues never conflict.
func laneImplement(content string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(
		`printf '%%s\n' %q >> "work-$DISINTO_ISSUE.txt" && git add "work-$DISINTO_ISSUE.txt" && git commit -q -m "fix: change (#$DISINTO_ISSUE)" && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`,
		content)))
}
