// Package datadir names every path under the daemon's data dir, once.
//
// The data dir is a volume the daemon owns. Everything in it is
// rebuildable from the forge or safely discarded, except what is queued
// there for the forge (the journals' queues, the mirror requests) and the
// run ledger; Migrate
// moves a data dir written by an older layout to this one without losing
// either.
//
//	state/<project>/                 the dev agent's issue-<N> directories
//	state/<project>/<role state>/    a role's state (the role table's StateDir)
//	state/<project>/local/<lane>/    a local-model dev agent's issue state
//	state/<project>/sessions/        model session ids (claude.SessionStore)
//	sessions/                        the sessions' workspaces
//	clones/<project>/<bot>/          a bot's clone of the project repository
//	review/<project>/clone/          the review agent's clone
//	ops/<project>/<bot>/             the daemon's ops checkout as one bot
//	ops-cli/<project>/<bot>/         the command line's ops checkout
//	vault/<project>/mirror-clone/    the vault's clone for mirror pushes
//	vault/<project>/mirror-queue.json  mirror pushes waiting to run again
//	state/<project>/[local/<lane>/]mirror-requests.json  mirror pushes not yet filed
//	memory/<bot>/                    a bot's .profile checkout and journal queue
//	chat/                            the chat's key, rates, history, sessions
//	ledger/ logs/ transcripts/       the run ledger, JSON logs, transcripts
//	secrets/ keys/age.txt            secrets at rest and their key
//	locks/                           lock files of the factory
//	agents.json schedule.json        enablement; the scheduler's last runs
//	daemon.json daemon.lock instance the running daemon; its lock; its id
package datadir

import (
	"path/filepath"

	"github.com/disinto/disinto/lib/config"
)

// SessionsEntry is the data-dir entry holding the sessions' workspaces:
// the only part of the data dir a session may enter.
const SessionsEntry = "sessions"

// Layout is the data dir rooted at one directory.
type Layout struct{ root string }

// New returns the layout of the data dir at root.
func New(root string) Layout { return Layout{root: root} }

// Root is the data dir itself.
func (l Layout) Root() string { return l.root }

func (l Layout) at(parts ...string) string {
	return filepath.Join(append([]string{l.root}, parts...)...)
}

// State is project's state: the dev agent's issue-<N> directories and
// every role's state directory.
func (l Layout) State(project string) string { return l.at("state", project) }

// RoleState is role's state of project, named by the role table's
// StateDir ("" is the project's state itself).
func (l Layout) RoleState(project string, role config.Role) string {
	spec, _ := config.SpecOf(role)
	return l.at("state", project, spec.StateDir)
}

// LaneState is the issue state of project's local-model dev agent lane:
// apart from the default dev agent's, which lists only the issue-<N>
// directories of State.
func (l Layout) LaneState(project, lane string) string { return l.at("state", project, "local", lane) }

// Issue is the state of issue n of project's default dev agent; n is a
// number, or a placeholder in previews.
func (l Layout) Issue(project, n string) string { return l.at("state", project, "issue-"+n) }

// PullRequest is the state of pull request n of project in previews of
// the review formula.
func (l Layout) PullRequest(project, n string) string { return l.at("state", project, "pr-"+n) }

// SessionStore is the root of the model session ids kept per project
// (claude.NewSessionStore): <root>/<project>/sessions.
func (l Layout) SessionStore() string { return l.at("state") }

// Sessions holds the sessions' workspaces.
func (l Layout) Sessions() string { return l.at(SessionsEntry) }

// Clone is bot's clone of project's repository.
func (l Layout) Clone(project, bot string) string { return l.at("clones", project, bot) }

// ReviewClone is the review agent's clone of project's repository, with
// its worktrees.
func (l Layout) ReviewClone(project string) string { return l.at("review", project, "clone") }

// Ops is the daemon's checkout of project's ops repository as identity
// (a bot's login): one per project and identity, shared by every user of
// that identity in the process.
func (l Layout) Ops(project, identity string) string { return l.at("ops", project, identity) }

// CLIOps is the command line's checkout of project's ops repository as
// identity: a process of its own, running beside the daemon, never
// shares the daemon's checkout.
func (l Layout) CLIOps(project, identity string) string { return l.at("ops-cli", project, identity) }

// MirrorClone is the vault's clone of project's repository from which
// mirrors are pushed.
func (l Layout) MirrorClone(project string) string { return l.at("vault", project, "mirror-clone") }

// MirrorQueue is the vault's record of project's mirror pushes that
// failed and when each runs again (vault.MirrorQueue).
func (l Layout) MirrorQueue(project string) string {
	return l.at("vault", project, "mirror-queue.json")
}

// MirrorRequests is the mirror-push requests the vault has not taken yet
// of project's dev agent, or of its local-model lane (lane not ""):
// queued state, never discarded.
func (l Layout) MirrorRequests(project, lane string) string {
	if lane != "" {
		return l.at("state", project, "local", lane, "mirror-requests.json")
	}
	return l.at("state", project, "mirror-requests.json")
}

// Profile is bot's checkout of its .profile repository.
func (l Layout) Profile(bot string) string { return l.at("memory", bot, "profile") }

// JournalQueue is bot's journal entries not yet pushed: queued state,
// never discarded.
func (l Layout) JournalQueue(bot string) string { return l.at("memory", bot, "journal.queue") }

// TrackRecord is the project's last track record (lib/trackrecord).
func (l Layout) TrackRecord(project string) string {
	return l.at("state", project, "track-record.json")
}

// GatewayDays is where a shared model gateway keeps its day tallies.
func (l Layout) GatewayDays() string { return l.at("gateway", "days.json") }

// Ledger is the run ledger's directory.
func (l Layout) Ledger() string { return l.at("ledger") }

// Logs is the agents' JSON log directory.
func (l Layout) Logs() string { return l.at("logs") }

// Transcripts holds the sessions' transcripts.
func (l Layout) Transcripts() string { return l.at("transcripts") }

// Schedule is the scheduler's store of last runs.
func (l Layout) Schedule() string { return l.at("schedule.json") }

// Enablement is the file of paused agents.
func (l Layout) Enablement() string { return l.at("agents.json") }

// DaemonInfo is where a running daemon says where it listens.
func (l Layout) DaemonInfo() string { return l.at("daemon.json") }

// DaemonLock is the one-process-per-data-dir lock.
func (l Layout) DaemonLock() string { return l.at("daemon.lock") }

// Instance holds the id of the data dir's daemon.
func (l Layout) Instance() string { return l.at("instance") }

// Secrets holds the secrets at rest.
func (l Layout) Secrets() string { return l.at("secrets") }

// AgeKey is the key the secrets are encrypted to.
func (l Layout) AgeKey() string { return l.at("keys", "age.txt") }

// LockDirs are where the factory keeps lock files: the data dir itself
// and its locks directory.
func (l Layout) LockDirs() []string { return []string{l.root, l.Locks()} }

// Locks is the directory of the factory's lock files.
func (l Layout) Locks() string { return l.at("locks") }

// Chat is the chat's directory.
func (l Layout) Chat() ChatDir { return ChatDir{dir: l.at("chat")} }

// ChatDir is the chat's directory and the files in it.
type ChatDir struct{ dir string }

// ChatAt returns the chat directory at dir.
func ChatAt(dir string) ChatDir { return ChatDir{dir: dir} }

// Dir is the directory itself.
func (c ChatDir) Dir() string { return c.dir }

// Key is the chat's session cookie key.
func (c ChatDir) Key() string { return filepath.Join(c.dir, "session.key") }

// Rates are the chat's rate counters.
func (c ChatDir) Rates() string { return filepath.Join(c.dir, "rates.json") }

// History holds the conversations.
func (c ChatDir) History() string { return filepath.Join(c.dir, "history") }

// Sessions is the root of the chat's model session ids.
func (c ChatDir) Sessions() string { return filepath.Join(c.dir, "sessions") }
