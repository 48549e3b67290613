package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// Severity is a finding's priority (spec 60 §3.2), P0 most urgent; Info
// is a status line, never escalated.
type Severity string

// Severities.
const (
	P0   Severity = "P0"
	P1   Severity = "P1"
	P2   Severity = "P2"
	P3   Severity = "P3"
	P4   Severity = "P4"
	Info Severity = "info"
)

// Finding is one condition a rule found this run.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Key is the subject within the rule (a path, a container, "pr-7");
	// "" when the rule has one subject.
	Key     string `json:"key,omitempty"`
	Summary string `json:"summary"`
	// Incident is the issue the finding is escalated in, once it is.
	Incident int64 `json:"incident,omitempty"`
	// subject is what the count is about (a head SHA): when it changes the
	// count starts again.
	subject string
	// evidence goes into an incident's body.
	evidence string
}

// id is the finding's state key.
func (f Finding) id() string {
	if f.Key == "" {
		return f.Rule
	}
	return f.Rule + "/" + f.Key
}

// Action is one remediation the run made (or tried).
type Action struct {
	Rule string `json:"rule"`
	Key  string `json:"key,omitempty"`
	What string `json:"what"`
	// Bytes is the space reclaimed, for prunes and rotations.
	Bytes uint64 `json:"bytes,omitempty"`
	Err   string `json:"error,omitempty"`
}

// verdict is what a remediation concluded.
type verdict int

const (
	// done: acted (or nothing to do) and the count goes on.
	done verdict = iota
	// fixed: the condition is gone.
	fixed
	// unfixable: the remediation cannot help; escalate now.
	unfixable
)

// Rule is one row of the rule table (spec 60 §6.3): what it looks at,
// when it fires, what it does, how often, and when a human hears of it.
type Rule struct {
	ID       string
	Severity Severity
	// Source is what the rule reads; when it was not observable the rule
	// finds nothing and its incidents are left as they are.
	Source string
	// Detect returns the findings of the rule in the snapshot.
	Detect func(p *pass) []Finding
	// Remedy, if set, acts on one finding; it is not called while the
	// finding cools down from its last remediation.
	Remedy func(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict
	// Cooldown is the least time between two remediations of a finding.
	Cooldown time.Duration
	// EscalateAfter escalates a finding seen in that many runs in a row;
	// 0 escalates only when the remedy says it cannot fix it, -1 never.
	EscalateAfter int
	// Fingerprint names the incident of a finding; default
	// "<rule>[-<key>]".
	Fingerprint func(f Finding) string
}

// fingerprint returns the stable incident id of f under r.
func (r Rule) fingerprint(f Finding) string {
	if r.Fingerprint != nil {
		return r.Fingerprint(f)
	}
	if f.Key == "" {
		return r.ID
	}
	return r.ID + "-" + slug(f.Key)
}

// slug makes a marker-safe kebab id of s.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// Rule ids.
const (
	RuleMemory          = "memory"
	RuleDisk            = "disk"
	RuleDiskWarn        = "disk-warn"
	RuleContainerDown   = "container-down"
	RuleDockerBlind     = "docker-unobservable"
	RuleCIStuck         = "ci-stuck"
	RuleDeadLock        = "dead-lock"
	RuleGitState        = "git-state"
	RuleAgentStalled    = "agent-stalled"
	RuleStalePR         = "stale-pr"
	RuleStaleWorktree   = "stale-worktree"
	RuleForgeUnreached  = "forge-unreachable"
	RuleIncidentStale   = "incident-stale"
	RuleRunFailures     = "run-failures"
	fingerprintDisk     = "disk-pressure"
	fingerprintMemory   = "memory-pressure"
	incidentRenotify    = 24 * time.Hour
	failureBurstMinimum = 3
)

// Rules is the rule table, in the order the rules run: the order of the
// spec's priorities, so that memory is handled before anything else.
func Rules() []Rule {
	return []Rule{
		{ID: RuleMemory, Severity: P0, Source: SourceHost, Detect: detectMemory, Remedy: remedyMemory,
			EscalateAfter: 2, Fingerprint: func(Finding) string { return fingerprintMemory }},
		{ID: RuleDisk, Severity: P1, Source: SourceHost, Detect: detectDisk, Remedy: remedyDisk,
			Cooldown: time.Hour, Fingerprint: func(Finding) string { return fingerprintDisk }},
		{ID: RuleDiskWarn, Severity: P3, Source: SourceHost, Detect: detectDiskWarn, EscalateAfter: -1},
		{ID: RuleDockerBlind, Severity: Info, Source: SourceLocal, Detect: detectDockerBlind, EscalateAfter: -1},
		{ID: RuleContainerDown, Severity: P2, Source: SourceDocker, Detect: detectContainers, Remedy: remedyContainer,
			Cooldown: time.Hour, EscalateAfter: 3},
		{ID: RuleForgeUnreached, Severity: P2, Source: SourceLocal, Detect: detectForgeDown, EscalateAfter: 1},
		{ID: RuleCIStuck, Severity: P2, Source: SourceForge, Detect: detectCIStuck, EscalateAfter: 2},
		{ID: RuleDeadLock, Severity: P2, Source: SourceLocal, Detect: detectDeadLocks, Remedy: remedyDeadLock, EscalateAfter: -1},
		{ID: RuleGitState, Severity: P2, Source: SourceLocal, Detect: detectGitState, Remedy: remedyGitState, Cooldown: 10 * time.Minute},
		{ID: RuleAgentStalled, Severity: P2, Source: SourceLocal, Detect: detectStalled, EscalateAfter: 2},
		{ID: RuleIncidentStale, Severity: P2, Source: SourceForge, Detect: detectStaleIncidents, Remedy: remedyRenotify,
			Cooldown: incidentRenotify, EscalateAfter: -1},
		{ID: RuleStalePR, Severity: P3, Source: SourceForge, Detect: detectStalePRs, Remedy: remedyStalePR, Cooldown: 24 * time.Hour},
		{ID: RuleStaleWorktree, Severity: P4, Source: SourceLocal, Detect: detectStaleWorktrees, Remedy: remedyWorktree, EscalateAfter: -1},
		{ID: RuleRunFailures, Severity: P2, Source: SourceLedger, Detect: detectFailures, EscalateAfter: 1},
	}
}

func detectMemory(p *pass) []Finding {
	m, lim := p.snap.Memory, p.cfg
	if m.TotalMB == 0 {
		return nil
	}
	var why []string
	if m.AvailableMB < int64(lim.MemoryAvailableMB) {
		why = append(why, fmt.Sprintf("%d MB available (< %d MB)", m.AvailableMB, lim.MemoryAvailableMB))
	}
	if m.SwapUsedMB > int64(lim.SwapUsedMB) {
		why = append(why, fmt.Sprintf("%d MB of swap used (> %d MB)", m.SwapUsedMB, lim.SwapUsedMB))
	}
	if len(why) == 0 {
		return nil
	}
	return []Finding{{Summary: "memory crisis: " + strings.Join(why, ", ")}}
}

// overCrit returns the disks above pct.
func overPct(disks []Disk, pct int) []Disk {
	var out []Disk
	for _, d := range disks {
		if d.Pct > float64(pct) {
			out = append(out, d)
		}
	}
	return out
}

func diskLine(d Disk) string {
	return fmt.Sprintf("%s (%s) at %.0f%%", d.What, d.Path, d.Pct)
}

func detectDisk(p *pass) []Finding {
	over := overPct(p.snap.Disks, p.cfg.DiskCritPct)
	if len(over) == 0 {
		return nil
	}
	var parts []string
	for _, d := range over {
		parts = append(parts, diskLine(d))
	}
	return []Finding{{Summary: fmt.Sprintf("disk above %d%%: %s", p.cfg.DiskCritPct, strings.Join(parts, ", "))}}
}

func detectDiskWarn(p *pass) []Finding {
	var out []Finding
	for _, d := range overPct(p.snap.Disks, p.cfg.DiskWarnPct) {
		if d.Pct > float64(p.cfg.DiskCritPct) {
			continue
		}
		f := Finding{Key: d.Path, Summary: fmt.Sprintf("disk above %d%%: %s", p.cfg.DiskWarnPct, diskLine(d))}
		if n := p.trend(d.Path, p.cfg.DiskWarnPct); n >= 3 {
			f.Summary += fmt.Sprintf("; trend: above %d%% for %d runs in a row", p.cfg.DiskWarnPct, n)
		}
		out = append(out, f)
	}
	return out
}

func detectDockerBlind(p *pass) []Finding {
	why, blind := p.snap.Unobserved[SourceDocker]
	if !blind {
		return nil
	}
	return []Finding{{Summary: "containers not observable: " + why}}
}

func detectContainers(p *pass) []Finding {
	listed := map[string]bool{}
	for _, n := range p.cfg.Containers {
		listed[n] = true
	}
	var out []Finding
	for _, c := range p.snap.Containers {
		switch {
		case !c.Running():
			f := Finding{Key: c.Name, Summary: fmt.Sprintf("container %s is %s (%s)", c.Name, c.State, c.Status)}
			if !listed[c.Name] {
				f.subject = "stack" // the stack's own: compose restarts it, we report
			}
			out = append(out, f)
		case c.Health == "unhealthy":
			out = append(out, Finding{Key: c.Name, subject: "stack", Summary: fmt.Sprintf("container %s is unhealthy", c.Name)})
		}
	}
	for _, n := range p.snap.Missing {
		out = append(out, Finding{Key: n, subject: "stack", Summary: fmt.Sprintf("container %s listed in [services] does not exist", n)})
	}
	return out
}

// detectForgeDown finds the forge unreachable in two runs in a row: one
// failed run is a blip, timed in the state without a finding.
func detectForgeDown(p *pass) []Finding {
	why, down := p.snap.Unobserved[SourceForge]
	if !down {
		return nil
	}
	if rs := p.st.Rules[RuleForgeUnreached]; rs == nil {
		p.keep(RuleForgeUnreached, "")
		return nil
	}
	return []Finding{{Summary: "forge unreachable: " + why}}
}

func detectCIStuck(p *pass) []Finding {
	if !p.cfg.CheckPipelineStall {
		return nil
	}
	var out []Finding
	for _, pr := range p.snap.PRs {
		if pr.CI != forge.CIPending {
			continue
		}
		key := fmt.Sprintf("pr-%d", pr.Number)
		since := p.firstSeen(RuleCIStuck+"/"+key, pr.Head)
		if p.now.Sub(since) < p.cfg.CIStale {
			// Counted from the first run that saw it pending.
			p.keep(RuleCIStuck+"/"+key, pr.Head)
			continue
		}
		out = append(out, Finding{Key: key, subject: pr.Head,
			Summary: fmt.Sprintf("CI of pull request #%d (%s) pending for %s", pr.Number, text.ShortSHA(pr.Head), p.now.Sub(since).Round(time.Minute))})
	}
	return out
}

func detectDeadLocks(p *pass) []Finding {
	var out []Finding
	for _, l := range p.snap.Locks {
		if !l.Alive {
			out = append(out, Finding{Key: l.Path, Summary: fmt.Sprintf("lock %s held by dead pid %d", l.Path, l.PID)})
		}
	}
	return out
}

func detectGitState(p *pass) []Finding {
	var out []Finding
	for _, c := range p.snap.Checkouts {
		if c.Err != "" || c.Held || (!c.Rebasing && c.Branch == c.Primary) {
			continue
		}
		what := "on " + c.Branch
		if c.Branch == "" {
			what = "detached"
		}
		if c.Rebasing {
			what = "mid-rebase"
		}
		out = append(out, Finding{Key: c.Dir, Summary: fmt.Sprintf("checkout %s is %s, not on %s", c.Dir, what, c.Primary)})
	}
	return out
}

func detectStalled(p *pass) []Finding {
	if !p.cfg.CheckDevAgent {
		return nil
	}
	var out []Finding
	for _, h := range p.snap.Agents {
		if h.LastProgressAt.IsZero() || p.now.Sub(h.LastProgressAt) < p.cfg.Stall {
			continue
		}
		out = append(out, Finding{Key: h.Agent + "-" + h.Key, Summary: fmt.Sprintf("%s run %s made no progress for %s",
			h.Agent, h.Key, p.now.Sub(h.LastProgressAt).Round(time.Minute))})
	}
	return out
}

func detectStaleIncidents(p *pass) []Finding {
	var out []Finding
	for fp, is := range p.snap.Incidents {
		if p.now.Sub(is.Created) < incidentRenotify || p.now.Sub(is.Updated) < incidentRenotify {
			continue
		}
		out = append(out, Finding{Key: fp, Summary: fmt.Sprintf("incident #%d (%s) open for %s without news", is.Number, fp,
			p.now.Sub(is.Created).Round(time.Hour))})
	}
	return out
}

func detectStalePRs(p *pass) []Finding {
	if !p.cfg.CheckPRs {
		return nil
	}
	var out []Finding
	for _, pr := range p.snap.PRs {
		terminal := pr.CI == forge.CISuccess || pr.CI == forge.CIFailure || pr.CI == forge.CIError
		if !terminal || pr.Held || p.now.Sub(pr.Updated) < p.cfg.StalePR {
			continue
		}
		out = append(out, Finding{Key: fmt.Sprintf("pr-%d", pr.Number), subject: pr.Head,
			Summary: fmt.Sprintf("pull request #%d: CI %s and no push for %s", pr.Number, pr.CI, p.now.Sub(pr.Updated).Round(time.Minute))})
	}
	return out
}

// detectStaleWorktrees finds worktrees nobody uses: not held by a
// heartbeat, not preserved, and not the checkout of an open pull request
// (the dev agent keeps those while it waits for CI or a review). With the
// forge unread that cannot be told, so nothing is found.
func detectStaleWorktrees(p *pass) []Finding {
	if !p.snap.observed(SourceForge) {
		return nil
	}
	open := map[string]bool{}
	for _, pr := range p.snap.PRs {
		open["sha:"+pr.Head], open["branch:"+pr.Branch] = true, true
	}
	var out []Finding
	for _, w := range p.snap.Worktrees {
		if w.Held || w.Preserved || p.now.Sub(w.Mod) < p.cfg.StaleWorktree || open["sha:"+w.Head] || (w.Branch != "" && open["branch:"+w.Branch]) {
			continue
		}
		out = append(out, Finding{Key: w.Dir, Summary: fmt.Sprintf("worktree %s unused for %s", w.Dir, p.now.Sub(w.Mod).Round(time.Minute))})
	}
	return out
}

func detectFailures(p *pass) []Finding {
	var out []Finding
	for _, b := range p.snap.Failures {
		out = append(out, Finding{Key: b.Role + "-" + b.Code, subject: b.Code,
			Summary: fmt.Sprintf("%s runs failed %d times with %s", b.Role, b.Count, b.Code), evidence: b.Detail})
	}
	return out
}
