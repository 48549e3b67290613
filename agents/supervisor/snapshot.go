package supervisor

import (
	"context"
	"time"

	"github.com/disinto/disinto/lib/dockerx"
	"github.com/disinto/disinto/lib/forge"
)

// Snapshot is what one run saw: typed, stored as JSON with the state and
// rendered as text only for the journal and the model (spec 60 §2.5).
type Snapshot struct {
	Taken   time.Time `json:"taken"`
	Project string    `json:"project"`
	Memory  Memory    `json:"memory"`
	Disks   []Disk    `json:"disks,omitempty"`
	// Containers are the stack's containers and the project's listed ones;
	// Missing are listed names the engine does not have.
	Containers []dockerx.Container `json:"containers,omitempty"`
	Missing    []string            `json:"missing_containers,omitempty"`
	Agents     []Heartbeat         `json:"agents,omitempty"`
	Locks      []Lock              `json:"locks,omitempty"`
	Checkouts  []CheckoutState     `json:"checkouts,omitempty"`
	Worktrees  []WorktreeState     `json:"worktrees,omitempty"`
	PRs        []PRState           `json:"prs,omitempty"`
	// Incidents are the open incident issues, by fingerprint.
	Incidents map[string]forge.Issue `json:"-"`
	// Bot is the supervisor bot, whose issues the incidents are.
	Bot string `json:"-"`
	// Failures are repeated run failures with one signature (the ledger).
	Failures []FailureBurst `json:"failures,omitempty"`
	// Unobserved says, by source, why a source could not be read this run
	// ("docker", "forge", "host", "ledger"); its rules then find nothing
	// and its incidents stay as they are.
	Unobserved map[string]string `json:"unobserved,omitempty"`
}

// Sources of a snapshot, for Snapshot.Unobserved.
const (
	SourceHost   = "host"
	SourceDocker = "docker"
	SourceForge  = "forge"
	SourceLedger = "ledger"
	SourceLocal  = "local"
)

// observed reports whether src was read this run.
func (s *Snapshot) observed(src string) bool {
	_, bad := s.Unobserved[src]
	return !bad
}

// unobserved records that src could not be read, and why.
func (s *Snapshot) unobserved(src string, err error) {
	if s.Unobserved == nil {
		s.Unobserved = map[string]string{}
	}
	s.Unobserved[src] = err.Error()
}

// Memory is the host's memory, in MiB.
type Memory struct {
	AvailableMB int64 `json:"available_mb"`
	TotalMB     int64 `json:"total_mb"`
	SwapUsedMB  int64 `json:"swap_used_mb"`
}

// Disk is the usage of the file system holding one path.
type Disk struct {
	// What names the path: "docker data root", "volume <name>", "data dir".
	What string  `json:"what"`
	Path string  `json:"path"`
	Pct  float64 `json:"pct"`
	Used uint64  `json:"used_bytes"`
	Size uint64  `json:"size_bytes"`
}

// Heartbeat is one running piece of agent work as its agent reports it.
// Zero times and ids mean the agent does not report them; rules that need
// them leave such a run alone.
type Heartbeat struct {
	Agent   string `json:"agent"`
	Project string `json:"project"`
	// Key is the agent's name of the work ("issue-42", "pr-7").
	Key   string `json:"key"`
	Issue int64  `json:"issue,omitempty"`
	PR    int64  `json:"pr,omitempty"`
	// PGID is the process group of the run's session (0: none).
	PGID int `json:"pgid,omitempty"`
	// Worktree is the checkout the run holds; empty means it may hold
	// any checkout of its project, which the git rules then leave alone.
	Worktree       string    `json:"worktree,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	LastProgressAt time.Time `json:"last_progress_at,omitzero"`
	// Deadline is when the run's own time limit (with its grace) ends.
	Deadline time.Time `json:"deadline,omitzero"`
}

// HeartbeatSource lists the agents' running work. Heartbeats must be
// cheap and safe to call concurrently with the agents.
type HeartbeatSource interface {
	Heartbeats() []Heartbeat
}

// Lock is a lock file of the factory and whether its owner lives.
type Lock struct {
	Path  string    `json:"path"`
	PID   int       `json:"pid"`
	Alive bool      `json:"alive"`
	Mod   time.Time `json:"modified"`
}

// CheckoutState is the git state of one of the factory's clones.
type CheckoutState struct {
	Dir      string `json:"dir"`
	Primary  string `json:"primary"`
	Branch   string `json:"branch"`
	Rebasing bool   `json:"rebasing,omitempty"`
	Held     bool   `json:"held,omitempty"`
	Err      string `json:"error,omitempty"`
}

// WorktreeState is one worktree of a factory clone.
type WorktreeState struct {
	Dir       string    `json:"dir"`
	Clone     string    `json:"clone"`
	Head      string    `json:"head"`
	Branch    string    `json:"branch,omitempty"`
	Mod       time.Time `json:"modified"`
	Held      bool      `json:"held,omitempty"`
	Preserved bool      `json:"preserved,omitempty"`
}

// PRState is an open pull request with the CI state of its head.
type PRState struct {
	Number  int64         `json:"number"`
	Head    string        `json:"head_sha"`
	Branch  string        `json:"branch"`
	CI      forge.CIState `json:"ci"`
	Updated time.Time     `json:"updated"`
	Held    bool          `json:"held,omitempty"`
}

// FailureBurst is a run failure signature that repeats.
type FailureBurst struct {
	Role  string    `json:"role"`
	Code  string    `json:"code"`
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
	// Detail is the latest record's detail (untrusted text).
	Detail string `json:"detail,omitempty"`
}

// collector is one source's part of a snapshot.
type collector func(ctx context.Context, s *Snapshot)
