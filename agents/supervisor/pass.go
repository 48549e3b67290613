package supervisor

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
)

// pass is one run's evaluation: the snapshot, the state, and what the
// rules found and did.
type pass struct {
	a    *Agent
	ctx  context.Context
	st   *state
	snap *Snapshot
	cfg  *config.Supervisor
	now  time.Time
	log  zerolog.Logger

	findings []Finding
	actions  []Action
	// escalations are the findings to escalate, by index into findings.
	escalations []escalation
	// tracked are states kept without a finding (a pending CI being
	// timed), by id.
	tracked map[string]bool
	// removals bounds what one run deletes; removed names what it did.
	removals int
	removed  map[string]bool
	// analysis is the model's summary, when it was asked.
	analysis string
}

// escalation is one finding to file or update an incident for.
type escalation struct {
	rule  Rule
	index int
}

// act records an action and logs it.
func (p *pass) act(f *Finding, what string, bytes uint64, err error) {
	a := Action{Rule: f.Rule, Key: f.Key, What: what, Bytes: bytes}
	ev := p.log.Info()
	if err != nil {
		a.Err = err.Error()
		ev = p.log.Warn().Err(err)
	}
	ev.Str("rule", f.Rule).Str("key", f.Key).Msg(what)
	p.actions = append(p.actions, a)
}

// keep tracks the state id without a finding this run, for a condition
// timed across runs; subject restarts it when it changes.
func (p *pass) keep(id, subject string) {
	if p.tracked == nil {
		p.tracked = map[string]bool{}
	}
	p.tracked[id] = true
	rs := p.st.Rules[id]
	if rs == nil || rs.Subject != subject {
		p.st.Rules[id] = &ruleState{FirstSeen: p.now, LastSeen: p.now, Subject: subject}
	}
}

// firstSeen is when the condition id about subject was first seen; now
// when it is new.
func (p *pass) firstSeen(id, subject string) time.Time {
	if rs := p.st.Rules[id]; rs != nil && rs.Subject == subject {
		return rs.FirstSeen
	}
	return p.now
}

// trend counts the runs in a row, this one included, in which the disk at
// path was above pct.
func (p *pass) trend(path string, pct int) int {
	n := 1
	for i := len(p.st.Snapshots) - 1; i >= 0; i-- {
		above := false
		for _, d := range p.st.Snapshots[i].Disks {
			if d.Path == path && d.Pct > float64(pct) {
				above = true
			}
		}
		if !above {
			break
		}
		n++
	}
	return n
}

// evaluate runs the rule table over the snapshot: each finding is counted,
// remediated unless it cools down, and queued for escalation when the
// rule says so.
func (p *pass) evaluate() {
	if p.st.Rules == nil {
		p.st.Rules = map[string]*ruleState{}
	}
	p.removed = map[string]bool{}
	seen := map[string]bool{}
	memoryCrisis := false
	for _, r := range p.a.o.Rules {
		if r.Source != SourceLocal && !p.snap.observed(r.Source) {
			// Unknown is not healthy: the rule's counters stand still.
			for id := range p.st.Rules {
				if id == r.ID || strings.HasPrefix(id, r.ID+"/") {
					seen[id] = true
				}
			}
			continue
		}
		for _, f := range r.Detect(p) {
			f.Rule, f.Severity = r.ID, r.Severity
			id := f.id()
			seen[id] = true
			rs := p.st.Rules[id]
			if rs == nil || (f.subject != "" && rs.Subject != "" && rs.Subject != f.subject) {
				rs = &ruleState{FirstSeen: p.now}
				p.st.Rules[id] = rs
			}
			rs.Consecutive++
			rs.LastSeen, rs.Subject = p.now, f.subject
			if r.ID == RuleMemory {
				memoryCrisis = true
			}
			v := done
			if r.Remedy != nil {
				before := len(p.actions)
				v = r.Remedy(p.ctx, p, &f, rs)
				if len(p.actions) > before {
					rs.Remedied++
					rs.LastAction = p.now
					if r.Cooldown > 0 {
						rs.CooldownUntil = p.now.Add(r.Cooldown)
					}
				}
			}
			p.findings = append(p.findings, f)
			if v == fixed {
				if !rs.coolingDown(p.now) {
					delete(p.st.Rules, id)
				} else {
					rs.Consecutive = 0
				}
				continue
			}
			if r.EscalateAfter >= 0 && (v == unfixable || (r.EscalateAfter > 0 && rs.Consecutive >= r.EscalateAfter)) {
				p.escalations = append(p.escalations, escalation{rule: r, index: len(p.findings) - 1})
			}
		}
	}
	if !memoryCrisis && p.snap.observed(SourceHost) {
		p.resumeAfterMemory()
	}
	for id, rs := range p.st.Rules {
		if seen[id] || p.tracked[id] {
			continue
		}
		if rs.coolingDown(p.now) {
			rs.Consecutive = 0
			continue
		}
		delete(p.st.Rules, id)
	}
}
