// Package formulaagent is the runtime of the scheduled roles that are
// mostly a formula: the gardener, planner, predictor and architect (and
// the live formula of the supervisor's analyst).
//
// The Driver owns a role's tick (Driver.Tick): it takes the project's
// lock (Lock), skips the run when nothing it looks at changed (Watch, and
// whatever else the role's Begin reads), resolves the bot's identity,
// runs the role's body, then leaves the watermark and the ledger record.
// A role supplies only what differs: what else it watches (Role.Begin),
// its inputs, how it validates its session's output and how it applies
// the result.
//
// Inside a run the Driver checks out a private copy of the primary branch
// on the role's own branch inside a session workspace (Checkout), renders
// the formula in force (resolved live at each run: .profile and ops
// repository overrides) with the bot's lessons and runs one bounded,
// sandboxed session in that copy (Work.Session, Work.Ask, which reads
// back the role's outbox), reads back only the files the role may change
// (Work.Collect), commits and pushes them as the role's bot and opens the
// pull request (Work.Publish), and posts a structured summary of the run
// on it (Summary). A role that needs no checkout runs its sessions in a
// scratch directory, new or resuming a stored conversation
// (Driver.Converse). Every session is built by claude.Call.
//
// The session never sees a credential: the clone and every push happen in
// the daemon with lib/git's credential helper, the session gets a
// standalone copy whose origin carries no credential, and what it leaves
// there is read back as plain files, never run.
package formulaagent
