package supervisor

import "github.com/disinto/disinto/lib/agent"

// Report implements agent.Reporter: the last run's open findings and
// actions, from memory.
func (a *Agent) Report() agent.Report {
	a.mu.Lock()
	last := a.last
	a.mu.Unlock()
	var r agent.Report
	for _, f := range last.Findings {
		r.Findings = append(r.Findings, agent.Finding{Project: a.o.Project.Name, Rule: f.Rule, Severity: string(f.Severity),
			Summary: f.Summary, Incident: f.Incident, Seen: last.At})
	}
	for _, x := range last.Actions {
		r.Actions = append(r.Actions, agent.Action{Project: a.o.Project.Name, Rule: x.Rule, What: x.What, Error: x.Err, At: last.At})
	}
	return r
}
