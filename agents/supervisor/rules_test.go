package supervisor

import (
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/dockerx"
	"github.com/disinto/disinto/lib/forge"
)

// TestRuleTable checks each rule's condition: one snapshot that fires
// it and one that does not.
func TestRuleTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	healthy := Memory{AvailableMB: 4000, TotalMB: 8000}
	cases := []struct {
		rule  string
		fires Snapshot
		quiet Snapshot
	}{
		{RuleMemory, Snapshot{Memory: Memory{AvailableMB: 400, TotalMB: 8000}}, Snapshot{Memory: healthy}},
		{RuleMemory + "/swap", Snapshot{Memory: Memory{AvailableMB: 4000, TotalMB: 8000, SwapUsedMB: 4000}}, Snapshot{Memory: healthy}},
		{RuleDisk, Snapshot{Disks: []Disk{{Path: "/d", Pct: 85}}}, Snapshot{Disks: []Disk{{Path: "/d", Pct: 75}}}},
		{RuleDiskWarn, Snapshot{Disks: []Disk{{Path: "/d", Pct: 75}}}, Snapshot{Disks: []Disk{{Path: "/d", Pct: 85}}}},
		{RuleDockerBlind, Snapshot{Unobserved: map[string]string{SourceDocker: "no socket"}}, Snapshot{}},
		{RuleContainerDown, Snapshot{Containers: []dockerx.Container{{Name: "c", State: "exited"}}},
			Snapshot{Containers: []dockerx.Container{{Name: "c", State: "running", Health: "healthy"}}}},
		{RuleContainerDown + "/unhealthy", Snapshot{Containers: []dockerx.Container{{Name: "c", State: "running", Health: "unhealthy"}}},
			Snapshot{Containers: []dockerx.Container{{Name: "c", State: "running"}}}},
		{RuleForgeUnreached, Snapshot{Unobserved: map[string]string{SourceForge: "refused"}}, Snapshot{}},
		{RuleDeadLock, Snapshot{Locks: []Lock{{Path: "/l", PID: 9, Alive: false}}}, Snapshot{Locks: []Lock{{Path: "/l", PID: 9, Alive: true}}}},
		{RuleGitState, Snapshot{Checkouts: []CheckoutState{{Dir: "/c", Primary: "main", Branch: "topic"}}},
			Snapshot{Checkouts: []CheckoutState{{Dir: "/c", Primary: "main", Branch: "topic", Held: true}}}},
		{RuleAgentStalled, Snapshot{Agents: []Heartbeat{{Agent: "dev", Key: "issue-1", LastProgressAt: now.Add(-time.Hour)}}},
			Snapshot{Agents: []Heartbeat{{Agent: "dev", Key: "issue-1", LastProgressAt: now.Add(-time.Minute)}, {Agent: "dev", Key: "issue-2"}}}},
		{RuleStalePR, Snapshot{PRs: []PRState{{Number: 1, CI: forge.CISuccess, Updated: now.Add(-time.Hour)}}},
			Snapshot{PRs: []PRState{{Number: 1, CI: forge.CIPending, Updated: now.Add(-time.Hour)}, {Number: 2, CI: forge.CISuccess, Updated: now.Add(-time.Hour), Held: true}}}},
		{RuleStaleWorktree, Snapshot{Worktrees: []WorktreeState{{Dir: "/w", Mod: now.Add(-3 * time.Hour)}}},
			Snapshot{Worktrees: []WorktreeState{{Dir: "/w", Mod: now.Add(-30 * time.Hour), Preserved: true}, {Dir: "/x", Mod: now.Add(-time.Hour)}}}},
		{RuleIncidentStale, Snapshot{Incidents: map[string]forge.Issue{"x": {Number: 1, Created: now.Add(-48 * time.Hour), Updated: now.Add(-25 * time.Hour)}}},
			Snapshot{Incidents: map[string]forge.Issue{"x": {Number: 1, Created: now.Add(-48 * time.Hour), Updated: now.Add(-time.Hour)}}}},
		{RuleRunFailures, Snapshot{Failures: []FailureBurst{{Role: "dev", Code: "forge.unauthorized", Count: 3}}}, Snapshot{}},
	}
	rules := map[string]Rule{}
	for _, r := range Rules() {
		rules[r.ID] = r
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			id, _, _ := cut(tc.rule)
			r, ok := rules[id]
			if !ok {
				t.Fatalf("no rule %s", id)
			}
			cfg := config.DefaultSupervisor()
			for _, s := range []struct {
				snap Snapshot
				want bool
			}{{tc.fires, true}, {tc.quiet, false}} {
				snap := s.snap
				// A previous run saw every condition (rules that wait a run).
				p := &pass{snap: &snap, cfg: &cfg, now: now, st: &state{Rules: map[string]*ruleState{id: {Consecutive: 1}}}}
				if got := len(r.Detect(p)) > 0; got != s.want {
					t.Errorf("fires = %v, want %v on %+v", got, s.want, s.snap)
				}
			}
		})
	}
	for id := range rules {
		found := false
		for _, tc := range cases {
			if x, _, _ := cut(tc.rule); x == id {
				found = true
			}
		}
		if !found && id != RuleCIStuck {
			t.Errorf("rule %s has no case", id)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// A CI pending since the first run that saw it fires once it is older
// than ci.stale_minutes, counted from stored state.
func TestCIStuckIsTimedAcrossRuns(t *testing.T) {
	r := newRig(t)
	r.o.Rules = []Rule{ruleByID(RuleCIStuck)}
	a := r.agent()
	snap := &Snapshot{PRs: []PRState{{Number: 4, Head: "abc", CI: forge.CIPending}}}
	st := &state{Rules: map[string]*ruleState{}}
	cfg := config.DefaultSupervisor()
	p := &pass{a: a, snap: snap, cfg: &cfg, now: r.clock.now(), st: st}
	p.evaluate()
	if len(p.findings) != 0 {
		t.Fatalf("fired at once: %+v", p.findings)
	}
	p = &pass{a: a, snap: snap, cfg: &cfg, now: r.clock.now().Add(61 * time.Minute), st: st}
	p.evaluate()
	if len(p.findings) != 1 {
		t.Fatalf("not fired after an hour: %+v", p.findings)
	}
}

func ruleByID(id string) Rule {
	for _, r := range Rules() {
		if r.ID == id {
			return r
		}
	}
	panic(id)
}

// The verdict is validated strictly.
func TestParseVerdict(t *testing.T) {
	for _, bad := range []string{`{}`, `{"summary": "x", "extra": 1}`, `{"summary": "x", "findings": [{"priority": "P9", "finding": "y"}]}`,
		`{"summary": "x", "incident": {"fingerprint": "Not Kebab"}}`, `not json`} {
		if _, err := ParseVerdict([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := ParseVerdict([]byte(`{"summary": "ok", "findings": [{"priority": "P2", "finding": "y"}], "incident": {"fingerprint": "a-b", "title": "t", "body": "b"}}`)); err != nil {
		t.Error(err)
	}
}
