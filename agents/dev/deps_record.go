package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// depRecordsPath is the file of the dependency records (see deps.go).
func (a *Agent) depRecordsPath() string { return filepath.Join(a.st.root, "dep-waits.json") }

// loadDepRecords reads the records; a missing file is none, an unreadable
// one is logged and started afresh (each waiting issue's comment is then
// found again by its marker).
func (a *Agent) loadDepRecords(snap *snapshot) map[int64]depRecord {
	out := map[int64]depRecord{}
	data, err := os.ReadFile(a.depRecordsPath())
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	if err != nil {
		snap.log.Warn().Str("file", a.depRecordsPath()).Str("error", err.Error()).Msg("dependency records unreadable; starting afresh")
		return map[int64]depRecord{}
	}
	return out
}

// saveDepRecords writes the records when they changed.
func (a *Agent) saveDepRecords(g *depGate) error {
	if !g.dirty {
		return nil
	}
	for n, r := range g.recs {
		if r.empty() {
			delete(g.recs, n)
		}
	}
	data, err := json.Marshal(g.recs)
	if err != nil {
		return fmt.Errorf("encode dependency records: %w", err)
	}
	if err := os.MkdirAll(a.st.root, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := writeAtomic(a.depRecordsPath(), data); err != nil {
		return fmt.Errorf("write %s: %w", a.depRecordsPath(), err)
	}
	g.dirty = false
	return nil
}
