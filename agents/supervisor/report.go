package supervisor

import (
	"path/filepath"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

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

// LastReport reads the last run's findings and actions of the supervisor
// whose state dir is stateDir, for status while no daemon runs; an empty
// report when it never ran.
func LastReport(stateDir, project string) agent.Report {
	a := &Agent{o: Options{Project: &config.Project{Name: project}}, store: stateStore{path: filepath.Join(stateDir, stateFile)}}
	st, err := a.store.load()
	if err != nil {
		return agent.Report{}
	}
	a.last = st.Last
	return a.Report()
}
