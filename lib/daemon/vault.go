package daemon

import (
	"sync"

	"github.com/disinto/disinto/lib/vault"
)

// ActionReporter is an agent that lists the vault actions it last saw,
// for status: the vault role's dispatchers.
type ActionReporter interface {
	Status() []vault.ActionStatus
}

// vaultAgents are the daemon's dispatchers.
type vaultAgents struct {
	mu     sync.Mutex
	agents []ActionReporter
}

// add registers a dispatcher.
func (va *vaultAgents) add(r ActionReporter) {
	va.mu.Lock()
	defer va.mu.Unlock()
	va.agents = append(va.agents, r)
}

// status lists every project's actions as last seen.
func (va *vaultAgents) status() []vault.ActionStatus {
	va.mu.Lock()
	defer va.mu.Unlock()
	out := []vault.ActionStatus{}
	for _, v := range va.agents {
		out = append(out, v.Status()...)
	}
	return out
}
