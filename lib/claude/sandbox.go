package claude

import (
	"github.com/disinto/disinto/lib/sandbox"
)

// isolationArgs keep the repository under work from configuring the
// session: no user, project or local settings (and so none of their
// hooks, permissions or MCP servers), no CLAUDE.md or rules files, no
// project skills, commands or agents, and MCP servers only from the
// factory. Verified against the pinned CLI in tests/security.
func isolationArgs(settings string) []string {
	args := []string{"--setting-sources=", "--strict-mcp-config"}
	if settings != "" {
		args = append(args, "--settings", settings)
	}
	return args
}

// isolationEnv is set for every session on top of the flags above.
var isolationEnv = map[string]string{
	"CLAUDE_CODE_DISABLE_CLAUDE_MDS":  "1",
	"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}

// prepareWorkspace gets ws ready for a run: nothing of an earlier session
// still runs. No login is copied in: a session reaches the model through
// the gateway with a key of its own, and the login of the daemon's config
// directory is the gateway's alone.
func (e *Exec) prepareWorkspace(ws *sandbox.Workspace) error { return ws.Reap() }

// finishWorkspace ends whatever the session left running. Nothing the
// session wrote is carried back: a login file it leaves (its own, or a
// forged one) never replaces the daemon's.
func (e *Exec) finishWorkspace(ws *sandbox.Workspace) error { return ws.Reap() }
