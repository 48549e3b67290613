package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/disinto/disinto/lib/formula"
)

// phaseCrashed is written by the runtime (never the model) when a session
// died, so the file tells what happened last.
const phaseCrashed = "PHASE:crashed"

// phaseReport is what a session left in its phase file.
type phaseReport struct {
	Phase  string // one of the formula.Phase* values, or "" when none
	Reason string
}

// readPhase reads the phase file: the first line (whitespace removed) is the
// phase, an optional "Reason:" line the reason. A missing file or an unknown
// phase reads as no phase.
func readPhase(path string) (phaseReport, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return phaseReport{}, nil
	}
	if err != nil {
		return phaseReport{}, fmt.Errorf("read phase file: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	var rep phaseReport
	p := strings.Join(strings.Fields(lines[0]), "")
	switch p {
	case formula.PhaseAwaitingCI, formula.PhaseAwaitingReview, formula.PhaseEscalate,
		formula.PhaseFailed, formula.PhaseDone:
		rep.Phase = p
	}
	for _, l := range lines[1:] {
		if r, ok := strings.CutPrefix(strings.TrimSpace(l), "Reason:"); ok {
			rep.Reason = strings.TrimSpace(r)
			break
		}
	}
	return rep, nil
}

// evidence is one file:line pointer of a refusal.
type evidence struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Note string `json:"note"`
}

// refusal is the result file a session writes instead of pushing.
type refusal struct {
	Status     string     `json:"status"`
	Reason     string     `json:"reason"`
	Evidence   []evidence `json:"evidence"`
	Dependency int64      `json:"dependency"`
	// Raw is the file content, for the "unable to proceed" fallback.
	Raw string `json:"-"`
}

// validEvidence keeps the entries naming a file and a positive line.
func (r refusal) validEvidence() []evidence {
	var out []evidence
	for _, e := range r.Evidence {
		if strings.TrimSpace(e.File) != "" && e.Line > 0 {
			out = append(out, e)
		}
	}
	return out
}

// readRefusal reads the result file; ok is false when there is none.
// Content that is not a JSON object with a status is still returned (with
// an empty Status) so it can be reported.
func readRefusal(path string) (refusal, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return refusal{}, false, nil
	}
	if err != nil {
		return refusal{}, false, fmt.Errorf("read result file: %w", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return refusal{}, false, nil
	}
	var r refusal
	if err := json.Unmarshal(data, &r); err != nil {
		r = refusal{}
	}
	r.Raw = string(data)
	return r, true, nil
}

// clearSessionFiles removes the phase and result files before a run so a
// stale line is never read as this run's answer.
func clearSessionFiles(paths ...string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear %s: %w", p, err)
		}
	}
	return nil
}
