package config

import (
	"regexp"
	"time"
)

// Supervisor defaults (spec 60 §3.2 and §6.3).
const (
	DefaultMemoryAvailableMB  = 500
	DefaultSwapUsedMB         = 3072
	DefaultDiskWarnPct        = 70
	DefaultDiskCritPct        = 80
	DefaultStaleWorktreeHours = 2
	DefaultStallMinutes       = 30
	DefaultStalePRMinutes     = 20
	DefaultStalePRRuns        = 3
	DefaultLogMaxMB           = 10
	DefaultCIStaleMinutes     = 60
)

// Supervisor is what a project file says of the supervisor: the
// containers it watches ([services]), its thresholds ([monitoring]) and
// when a pending CI result counts as stuck (ci.stale_minutes).
type Supervisor struct {
	// Containers are container names the supervisor watches beside the
	// compose stack's own ([services] containers): a stopped one is
	// started once, then escalated.
	Containers []string
	// CheckPRs, CheckDevAgent and CheckPipelineStall switch the stale
	// pull request, stalled agent and stuck CI rules.
	CheckPRs           bool
	CheckDevAgent      bool
	CheckPipelineStall bool
	// MemoryAvailableMB and SwapUsedMB define P0 memory: available below
	// the one, or swap used above the other.
	MemoryAvailableMB int
	SwapUsedMB        int
	// DiskWarnPct and DiskCritPct are the P1 disk thresholds of the
	// Docker data root and the stack's volumes.
	DiskWarnPct int
	DiskCritPct int
	// StaleWorktree is the age past which an unreferenced worktree is
	// removed.
	StaleWorktree time.Duration
	// Stall is how long a running agent may go without progress.
	Stall time.Duration
	// StalePR is how long a pull request with a finished CI may sit
	// without a push; StalePRRuns how many runs in a row before the dev
	// agent is asked to walk it again.
	StalePR     time.Duration
	StalePRRuns int
	// LogMaxBytes is the size past which an agent log is rotated.
	LogMaxBytes int64
	// CIStale is the age past which a pending CI result is stuck.
	CIStale time.Duration
}

// DefaultSupervisor is the supervisor's settings when a file says nothing.
func DefaultSupervisor() Supervisor {
	return Supervisor{
		CheckPRs: true, CheckDevAgent: true, CheckPipelineStall: true,
		MemoryAvailableMB: DefaultMemoryAvailableMB, SwapUsedMB: DefaultSwapUsedMB,
		DiskWarnPct: DefaultDiskWarnPct, DiskCritPct: DefaultDiskCritPct,
		StaleWorktree: DefaultStaleWorktreeHours * time.Hour, Stall: DefaultStallMinutes * time.Minute,
		StalePR: DefaultStalePRMinutes * time.Minute, StalePRRuns: DefaultStalePRRuns,
		LogMaxBytes: DefaultLogMaxMB << 20, CIStale: DefaultCIStaleMinutes * time.Minute,
	}
}

// rawServices mirrors [services].
type rawServices struct {
	Containers []string `toml:"containers"`
}

// rawMonitoring mirrors [monitoring]; nil means "not set".
type rawMonitoring struct {
	CheckPRs           *bool `toml:"check_prs"`
	CheckDevAgent      *bool `toml:"check_dev_agent"`
	CheckPipelineStall *bool `toml:"check_pipeline_stall"`
	MemoryAvailableMB  *int  `toml:"memory_available_mb"`
	SwapUsedMB         *int  `toml:"swap_used_mb"`
	DiskWarnPct        *int  `toml:"disk_warn_pct"`
	DiskCritPct        *int  `toml:"disk_crit_pct"`
	StaleWorktreeHours *int  `toml:"stale_worktree_hours"`
	StallMinutes       *int  `toml:"stall_minutes"`
	StalePRMinutes     *int  `toml:"stale_pr_minutes"`
	StalePRRuns        *int  `toml:"stale_pr_runs"`
	LogMaxMB           *int  `toml:"log_max_mb"`
}

// containerNameRe is what the engine accepts as a container name.
var containerNameRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// supervisor validates the supervisor's keys over the defaults; bad
// reports each problem by key.
func (r *rawProject) supervisor(bad func(key, format string, args ...any)) Supervisor {
	s := DefaultSupervisor()
	seen := map[string]bool{}
	for _, c := range r.Services.Containers {
		switch {
		case !containerNameRe.MatchString(c):
			bad("services.containers", "%q is not a container name", c)
		case !seen[c]:
			seen[c] = true
			s.Containers = append(s.Containers, c)
		}
	}
	m := r.Monitoring
	s.CheckPRs = boolOr(m.CheckPRs, s.CheckPRs)
	s.CheckDevAgent = boolOr(m.CheckDevAgent, s.CheckDevAgent)
	s.CheckPipelineStall = boolOr(m.CheckPipelineStall, s.CheckPipelineStall)
	intIn := func(key string, src *int, lo, hi int, dst *int) {
		if src == nil {
			return
		}
		if *src < lo || *src > hi {
			bad(key, "must be an integer from %d to %d", lo, hi)
			return
		}
		*dst = *src
	}
	intIn("monitoring.memory_available_mb", m.MemoryAvailableMB, 1, 1<<20, &s.MemoryAvailableMB)
	intIn("monitoring.swap_used_mb", m.SwapUsedMB, 1, 1<<20, &s.SwapUsedMB)
	intIn("monitoring.disk_warn_pct", m.DiskWarnPct, 1, 100, &s.DiskWarnPct)
	intIn("monitoring.disk_crit_pct", m.DiskCritPct, 1, 100, &s.DiskCritPct)
	if s.DiskWarnPct > s.DiskCritPct {
		bad("monitoring.disk_warn_pct", "must not exceed monitoring.disk_crit_pct (%d)", s.DiskCritPct)
	}
	durIn := func(key string, src *int, unit time.Duration, hi int, dst *time.Duration) {
		var n int
		if src == nil {
			return
		}
		intIn(key, src, 1, hi, &n)
		if n > 0 {
			*dst = time.Duration(n) * unit
		}
	}
	durIn("monitoring.stale_worktree_hours", m.StaleWorktreeHours, time.Hour, 24*365, &s.StaleWorktree)
	durIn("monitoring.stall_minutes", m.StallMinutes, time.Minute, 24*60, &s.Stall)
	durIn("monitoring.stale_pr_minutes", m.StalePRMinutes, time.Minute, 30*24*60, &s.StalePR)
	durIn("ci.stale_minutes", r.CI.StaleMinutes, time.Minute, 7*24*60, &s.CIStale)
	intIn("monitoring.stale_pr_runs", m.StalePRRuns, 1, 100, &s.StalePRRuns)
	var logMB int
	if intIn("monitoring.log_max_mb", m.LogMaxMB, 1, 1<<20, &logMB); logMB > 0 {
		s.LogMaxBytes = int64(logMB) << 20
	}
	return s
}
