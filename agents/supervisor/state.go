package supervisor

import (
	"fmt"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
)

// keepSnapshots is how many snapshots the state keeps for trends.
const keepSnapshots = 12

// state is what the supervisor remembers between runs (spec 60 §6.2), one
// JSON file under the data dir. Everything in it can be lost: counters
// start again and incidents are found again by their marker.
type state struct {
	// Rules holds the counters of each finding, by rule id and subject.
	Rules map[string]*ruleState `json:"rules,omitempty"`
	// Incidents maps a fingerprint to its open issue.
	Incidents map[string]int64 `json:"incidents,omitempty"`
	// Paused are the roles the supervisor paused for memory, to resume
	// exactly those.
	Paused []config.Role `json:"paused,omitempty"`
	// Snapshots are the last runs' snapshots, oldest first.
	Snapshots []Snapshot `json:"snapshots,omitempty"`
	// Last is the last run's outcome, for status.
	Last Outcome `json:"last"`
}

// ruleState is one finding's history.
type ruleState struct {
	// Consecutive counts the runs in a row that found it.
	Consecutive int       `json:"consecutive"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	// Remedied counts the remediations made since it was first seen.
	Remedied   int       `json:"remedied,omitempty"`
	LastAction time.Time `json:"last_action,omitzero"`
	// CooldownUntil holds off the next remediation.
	CooldownUntil  time.Time `json:"cooldown_until,omitzero"`
	LastEscalation time.Time `json:"last_escalation,omitzero"`
	// Subject remembers what the finding was about (a head SHA), to start
	// the count again when it changes.
	Subject string `json:"subject,omitempty"`
}

// coolingDown reports whether the finding's remediation waits.
func (r *ruleState) coolingDown(now time.Time) bool { return now.Before(r.CooldownUntil) }

// Outcome is what one run found and did.
type Outcome struct {
	Run      string    `json:"run"`
	At       time.Time `json:"at"`
	Findings []Finding `json:"findings,omitempty"`
	Actions  []Action  `json:"actions,omitempty"`
	Journal  string    `json:"journal,omitempty"`
}

// stateStore is the state file.
type stateStore struct{ path string }

func (s stateStore) load() (*state, error) {
	// A torn or foreign file is discarded: counters start again.
	st, _, err := atomicfile.ReadState[state](s.path)
	if err != nil {
		return nil, fmt.Errorf("supervisor state: %w", err)
	}
	return &st, nil
}

func (s stateStore) save(st *state) error {
	if err := atomicfile.WriteState(s.path, st); err != nil {
		return fmt.Errorf("write supervisor state: %w", err)
	}
	return nil
}
