// Package formulaagent is the runtime shared by the scheduled roles that
// are mostly a formula: the gardener, and after it the planner, predictor,
// architect and supervisor.
//
// A run of such a role goes through the same steps, each a small piece
// here: take the project's lock (Lock), skip the run when nothing it looks
// at changed (Watch), check out a private copy of the primary branch on
// the role's own branch inside a session workspace (Checkout), render the
// formula with the bot's lessons and run one bounded, sandboxed session in
// that copy (Work.Session), read back only the files the role may change
// (Work.Collect), commit and push them as the role's bot and open the pull
// request (Work.Publish), and post a structured summary of the run on it
// (Summary). The role's own Go validates what the session wrote and
// applies what was merged; the dev agent merges the approved, green pull
// request (agents/dev chores).
//
// The session never sees a credential: the clone and every push happen in
// the daemon with lib/git's credential helper, the session gets a
// standalone copy whose origin carries no credential, and what it leaves
// there is read back as plain files, never run.
package formulaagent
