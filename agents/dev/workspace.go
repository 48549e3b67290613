package dev

import (
	"context"
	"strconv"

	"github.com/disinto/disinto/lib/sandbox"
)

// workspaceKey names the sandbox workspace of issue n of this project.
func (a *Agent) workspaceKey(n int64) string {
	return sandbox.Key("dev", a.o.Project, "issue", strconv.FormatInt(n, 10))
}

// workspace returns the sandbox workspace of issue n, making it on first
// use: the checkout the session works in and the outbox its phase and
// result files go to.
func (a *Agent) workspace(n int64) (*sandbox.Workspace, error) {
	return a.sb.Workspace(a.workspaceKey(n))
}

// phaseFile and resultFile are where the session of issue n writes.
func (a *Agent) phaseFile(ws *sandbox.Workspace) string  { return ws.Out("phase") }
func (a *Agent) resultFile(ws *sandbox.Workspace) string { return ws.Out("result.json") }

// removeWorkspace deletes issue st's workspace (its checkout, home and
// outbox) once the issue needs no more sessions; failures are logged.
func (a *Agent) removeWorkspace(_ context.Context, st *State) {
	if err := a.sb.Remove(a.workspaceKey(st.Issue)); err != nil {
		a.issueLog(*st).Warn().Err(err).Msg("remove workspace")
	}
}
