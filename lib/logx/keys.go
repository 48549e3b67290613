package logx

// Log keys shared by every package, so that log lines can be filtered by
// the same field names everywhere.
const (
	KeyAgent    = "agent"
	KeyProject  = "project"
	KeyIssue    = "issue"
	KeyPR       = "pr"
	KeyPhase    = "phase"
	KeySession  = "session"
	KeyWorktree = "worktree"
	KeyDuration = "duration"
	KeyBackend  = "backend"
	KeyOutcome  = "outcome"
	KeySHA      = "sha"
	KeyRun      = "run"
)
