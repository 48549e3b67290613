package daemon

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/sandbox"
)

// How sessions run, as /status and `disinto status` report it.
const (
	SessionsIsolated   = "isolated"
	SessionsUnisolated = "unisolated"
)

func SessionsMode(sb *sandbox.Sandbox) string {
	if sb.Isolated() {
		return SessionsIsolated
	}
	return SessionsUnisolated
}

// openSandbox sets up the confinement of model sessions. As root (the
// container's daemon) every session gets an unprivileged uid of its own,
// and everything else the daemon writes becomes private to it. Without
// root that is impossible, and the daemon refuses to run sessions unless
// allowUnisolated says the operator accepts that a session can read what
// the daemon can, its credentials included. Isolated sessions take their
// uids from pool (zero values: the sandbox's defaults).
func openSandbox(dataDir string, allowUnisolated bool, pool config.SessionUIDs, log zerolog.Logger) (*sandbox.Sandbox, error) {
	root := datadir.New(dataDir).Sessions()
	if os.Geteuid() != 0 {
		if !allowUnisolated {
			return nil, fmt.Errorf("model sessions cannot be isolated: disinto runs as uid %d, not root, so a session could read every credential of this daemon; "+
				"run it as root (the compose stack does) or pass --allow-unisolated-sessions (DISINTO_ALLOW_UNISOLATED_SESSIONS=1) to accept that", os.Geteuid())
		}
		log.Warn().Msg("UNISOLATED SESSIONS: model sessions run as this daemon's own user and can read its credentials, state and logs (--allow-unisolated-sessions)")
		return sandbox.New(sandbox.Options{Root: root, Log: log})
	}
	if err := sandbox.PrivateDataDir(dataDir, datadir.SessionsEntry); err != nil {
		return nil, err
	}
	return sandbox.New(sandbox.Options{Root: root, Isolate: true, UIDBase: pool.Base, UIDCount: pool.Count, Log: log})
}
