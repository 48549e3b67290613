package supervisor

import (
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// RuntimeHeartbeats is the HeartbeatSource of the agent runtime: every
// running tick and piece of work of the project with its progress, and
// the process group and deadline of the claude session it runs. The
// runtime does not say which checkout a run uses, so a running heartbeat
// holds every checkout of its project (the git rules then wait). The
// supervisor's own tick is left out.
type RuntimeHeartbeats struct {
	Runtime *agent.Runtime
	// Project keeps the work of one project; "" keeps all.
	Project string
}

// Heartbeats implements HeartbeatSource.
func (r RuntimeHeartbeats) Heartbeats() []Heartbeat {
	var out []Heartbeat
	for _, h := range r.Runtime.Heartbeats() {
		if (r.Project != "" && h.Project != r.Project) || h.Role == string(config.RoleSupervisor) {
			continue
		}
		out = append(out, Heartbeat{Agent: h.Role, Project: h.Project, Key: h.Key, PGID: h.PGID,
			StartedAt: h.StartedAt, LastProgressAt: h.LastProgressAt, Deadline: h.Deadline})
	}
	return out
}

// EnablementPauser pauses new runs through the agents' enablement record,
// which every tick reads: each role of the project but the supervisor,
// except those already paused (by a human), which it neither pauses nor
// resumes.
type EnablementPauser struct {
	Enablement *agent.Enablement
	Project    string
}

// PauseNewRuns implements Pauser.
func (e EnablementPauser) PauseNewRuns() ([]config.Role, error) {
	var paused []config.Role
	for _, r := range config.ScheduledRoles() {
		if r == config.RoleSupervisor {
			continue
		}
		already, err := e.Enablement.Paused(e.Project, r)
		if err != nil {
			return paused, err
		}
		if already {
			continue
		}
		if err := e.Enablement.Pause(r, e.Project); err != nil {
			return paused, err
		}
		paused = append(paused, r)
	}
	return paused, nil
}

// ResumeNewRuns implements Pauser.
func (e EnablementPauser) ResumeNewRuns(roles []config.Role) error {
	for _, r := range roles {
		if err := e.Enablement.Resume(r, e.Project); err != nil {
			return err
		}
	}
	return nil
}
