package daemon

import (
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/scheduler"
)

// ReplicaInfo is this daemon's place among the agent replicas
// (DISINTO_REPLICA_SLOT of DISINTO_REPLICAS) and the projects it owns:
// it schedules the roles of these only. Another replica schedules the
// rest.
type ReplicaInfo struct {
	Slot     int      `json:"slot"`
	Replicas int      `json:"replicas"`
	Owned    []string `json:"owned"`
	// Configured is how many projects the configuration has in all.
	Configured int `json:"configured"`
}

// OwnedConfig is cfg with only the projects this replica owns, and where
// it stands; a single replica (the default) owns cfg's every project and
// gets cfg itself. The daemon works from the result: scheduled roles,
// lanes, ops checkouts, webhooks and readiness are those of its projects,
// and so is `disinto status` without a running daemon.
func OwnedConfig(cfg *config.Config) (*config.Config, *ReplicaInfo) {
	if cfg.Shard.Single() {
		return cfg, nil
	}
	info := &ReplicaInfo{Slot: cfg.Shard.Slot, Replicas: cfg.Shard.Replicas, Configured: len(cfg.Projects), Owned: []string{}}
	owned := *cfg
	owned.Projects = nil
	for _, p := range cfg.Projects {
		if cfg.Owns(p) {
			owned.Projects = append(owned.Projects, p)
			info.Owned = append(info.Owned, p.Name)
		}
	}
	return &owned, info
}

// afterHandover is j as a replica schedules it: a job that would run at
// once when its schedule has no record of it (a role that runs at start,
// then an interval after each run, such as the supervisor) waits its
// interval instead, because with several replicas no record usually means
// the project has just moved here from a replica that ran the role
// moments ago. Jobs that run at every start (dev, review, the vault) are
// unchanged: their runs are claims and exactly-once records, which hold
// across replicas.
func afterHandover(j scheduler.Job) scheduler.Job {
	if j.FirstRun == scheduler.FirstRunSoon {
		j.FirstRun = scheduler.FirstRunAfterInterval
	}
	return j
}
