// Package ledgertest holds an in-memory ledger for tests of code that
// records runs.
package ledgertest

import (
	"sync"

	"github.com/disinto/disinto/lib/ledger"
)

// Memory is an in-memory ledger: Append validates and keeps each record,
// as the file ledger does. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	recs []ledger.Record
}

// Append validates r and keeps it.
func (m *Memory) Append(r ledger.Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return nil
}

// Records returns a copy of every record appended so far.
func (m *Memory) Records() []ledger.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ledger.Record(nil), m.recs...)
}
