package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/sandbox"
)

// credentialsFile is where the CLI keeps a subscription login inside its
// config directory.
const credentialsFile = ".credentials.json"

// maxCredentials bounds what is read back of a session's login file.
const maxCredentials = 64 << 10

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
// still runs, and a subscription login of the daemon's config directory
// is copied in (the session's own config directory replaces the shared
// one, so sessions never read each other's transcripts).
func (e *Exec) prepareWorkspace(ws *sandbox.Workspace) error {
	if err := ws.Reap(); err != nil {
		return err
	}
	if e.opts.ConfigDir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(e.opts.ConfigDir, credentialsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("claude login: %w", err)
	}
	if err := ws.WriteHome(filepath.Join(".claude", credentialsFile), data, 0o600); err != nil {
		return fmt.Errorf("claude login: %w", err)
	}
	return nil
}

// finishWorkspace ends whatever the session left running and carries a
// refreshed login back to the daemon's config directory, so that the
// next session does not start from a rotated-out token. Only a JSON
// object with the same top-level keys is taken.
func (e *Exec) finishWorkspace(ws *sandbox.Workspace) error {
	reapErr := ws.Reap()
	if e.opts.ConfigDir == "" {
		return reapErr
	}
	shared := filepath.Join(e.opts.ConfigDir, credentialsFile)
	old, err := os.ReadFile(shared)
	if err != nil {
		return reapErr
	}
	cur, err := ws.ReadHome(filepath.Join(".claude", credentialsFile), maxCredentials)
	if err != nil || bytes.Equal(cur, old) || !sameKeys(old, cur) {
		return reapErr
	}
	return errors.Join(reapErr, atomicfile.Write(shared, cur, 0o600))
}

func sameKeys(a, b []byte) bool {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil || len(ma) != len(mb) {
		return false
	}
	for k := range ma {
		if _, ok := mb[k]; !ok {
			return false
		}
	}
	return true
}
