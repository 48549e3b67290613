package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// JobState is what survives a restart for one job.
type JobState struct {
	// LastDue is the scheduled time of the last regular run; the next
	// regular run is due one interval later.
	LastDue   time.Time `json:"last_due,omitzero"`
	LastStart time.Time `json:"last_start,omitzero"`
	LastEnd   time.Time `json:"last_end,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// Store persists JobStates in one JSON file (<data>/schedule.json), written
// atomically. A nil *Store keeps nothing, which is what one-shot runs want.
type Store struct {
	path string

	mu   sync.Mutex
	jobs map[string]JobState
}

// OpenStore reads path; a missing file is an empty store.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, jobs: map[string]JobState{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read schedule: %w", err)
	}
	if err := json.Unmarshal(data, &s.jobs); err != nil {
		return nil, fmt.Errorf("parse schedule %s: %w", path, err)
	}
	return s, nil
}

// Get returns the state of key ("project/role").
func (s *Store) Get(key string) (JobState, bool) {
	if s == nil {
		return JobState{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.jobs[key]
	return st, ok
}

// Put records the state of key and writes the file.
func (s *Store) Put(key string, st JobState) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[key] = st
	data, err := json.MarshalIndent(s.jobs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode schedule: %w", err)
	}
	return atomicfile.Write(s.path, data, 0o640)
}

// All returns a copy of every job's state, keyed by "project/role".
func (s *Store) All() map[string]JobState {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]JobState, len(s.jobs))
	for k, v := range s.jobs {
		out[k] = v
	}
	return out
}
