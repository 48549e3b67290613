// Package phase implements the phase-file protocol between a model session
// and the orchestrator that runs it.
//
// The prompt tells the model where its phase file is. The model writes one
// line, "PHASE:<name>", optionally followed by a line "Reason: <text>". The
// orchestrator reads the file when the session exits (and may watch it while
// the session runs) and acts on the phase. The runtime itself writes
// PHASE:crashed when a session dies. Refusals are reported through a separate
// JSON result file (see Result).
//
// This package imports no other disinto package.
package phase

import (
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/text"
)

// Phase is one of the closed set of phase names.
type Phase string

// The phases a phase file may hold.
const (
	// AwaitingCI: the model pushed and waits for CI on its branch.
	AwaitingCI Phase = "awaiting_ci"
	// AwaitingReview: CI passed and the model waits for a review.
	AwaitingReview Phase = "awaiting_review"
	// Escalate: the model needs a human; the reason says why.
	Escalate Phase = "escalate"
	// Failed: the model gave up; the reason says why.
	Failed Phase = "failed"
	// Done: the work is finished.
	Done Phase = "done"
	// Crashed: the session died; written by the runtime, never by the model.
	Crashed Phase = "crashed"
)

// Prefix starts every phase line.
const Prefix = "PHASE:"

// ErrInvalid is wrapped by every error about malformed phase or result
// content, so callers can tell bad content from I/O failures.
var ErrInvalid = errors.New("invalid")

// ErrEmpty is returned by Read for a phase file that exists but holds
// nothing yet, as when a writer has truncated it and not written the line.
var ErrEmpty = errors.New("empty phase file")

// All returns every phase in protocol order.
func All() []Phase {
	return []Phase{AwaitingCI, AwaitingReview, Escalate, Failed, Done, Crashed}
}

// Validate returns an error wrapping ErrInvalid unless p is a known phase.
func (p Phase) Validate() error {
	switch p {
	case AwaitingCI, AwaitingReview, Escalate, Failed, Done, Crashed:
		return nil
	}
	return fmt.Errorf("phase %q: %w", string(p), ErrInvalid)
}

// Terminal reports whether the session is over in phase p: Done, Failed,
// Escalate and Crashed end a session; the awaiting phases hand control to
// the orchestrator and expect to be resumed.
func (p Phase) Terminal() bool {
	switch p {
	case Escalate, Failed, Done, Crashed:
		return true
	}
	return false
}

// Line returns the line that records p in a phase file, "PHASE:<name>".
func (p Phase) Line() string { return Prefix + string(p) }

// String returns the phase name.
func (p Phase) String() string { return string(p) }

// Parse reads a phase line such as "PHASE:awaiting_ci". Surrounding
// whitespace is ignored; the prefix is required and case-sensitive, the name
// is case-insensitive. Unknown names are an error wrapping ErrInvalid.
func Parse(line string) (Phase, error) {
	s := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
	name, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return "", fmt.Errorf("phase line %q: missing %q: %w", text.Clip(line, maxShown), Prefix, ErrInvalid)
	}
	p := Phase(strings.ToLower(strings.TrimSpace(name)))
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("phase line %q: unknown phase: %w", text.Clip(line, maxShown), ErrInvalid)
	}
	return p, nil
}

// maxShown is how much of a bad line an error quotes.
const maxShown = 80
