package supervisor

import (
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// RuntimeHeartbeats is the HeartbeatSource of the agent runtime's tracked
// work: who runs what since when. It knows no process group, progress or
// deadline, so the rules that need them leave such work alone.
type RuntimeHeartbeats struct {
	Runtime *agent.Runtime
	// Project keeps the work of one project; "" keeps all.
	Project string
}

// Heartbeats implements HeartbeatSource.
func (r RuntimeHeartbeats) Heartbeats() []Heartbeat {
	var out []Heartbeat
	for _, w := range r.Runtime.Running() {
		if r.Project != "" && w.Project != r.Project {
			continue
		}
		out = append(out, Heartbeat{Agent: w.Role, Project: w.Project, Key: w.Key, StartedAt: w.Since})
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
	for _, r := range config.ScheduledRoles {
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
