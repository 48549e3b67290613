package phase

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Status is the kind of refusal recorded in a result file.
type Status string

// The refusals a model may report instead of pushing work.
const (
	// TooLarge: the issue cannot be done in one session and should be split.
	TooLarge Status = "too_large"
	// AlreadyDone: the code base already does what the issue asks.
	AlreadyDone Status = "already_done"
	// UnmetDependency: another issue must land first.
	UnmetDependency Status = "unmet_dependency"
)

// Validate returns an error wrapping ErrInvalid unless s is a known status.
func (s Status) Validate() error {
	switch s {
	case TooLarge, AlreadyDone, UnmetDependency:
		return nil
	}
	return fmt.Errorf("status %q: %w", string(s), ErrInvalid)
}

// Evidence points at what supports a refusal: a file, optionally a line in
// it, and a note saying what it shows.
type Evidence struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Note string `json:"note,omitempty"`
}

// Result is the refusal a model writes to its result file instead of pushing
// a branch. It is honoured only when no branch was pushed.
type Result struct {
	Status     Status     `json:"status"`
	Reason     string     `json:"reason,omitempty"`
	Evidence   []Evidence `json:"evidence,omitempty"`
	Dependency int64      `json:"dependency,omitempty"` // the issue that must land first
}

// Validate checks that r is a complete refusal: a known status, a reason for
// too_large and already_done, a positive dependency for unmet_dependency, and
// a file for every piece of evidence. Errors wrap ErrInvalid.
func (r Result) Validate() error {
	if err := r.Status.Validate(); err != nil {
		return err
	}
	switch r.Status {
	case TooLarge, AlreadyDone:
		if strings.TrimSpace(r.Reason) == "" {
			return fmt.Errorf("status %s needs a reason: %w", r.Status, ErrInvalid)
		}
	case UnmetDependency:
		if r.Dependency <= 0 {
			return fmt.Errorf("status %s needs a positive dependency: %w", r.Status, ErrInvalid)
		}
	}
	for i, e := range r.Evidence {
		if strings.TrimSpace(e.File) == "" {
			return fmt.Errorf("evidence[%d]: file is empty: %w", i, ErrInvalid)
		}
		if e.Line < 0 {
			return fmt.Errorf("evidence[%d]: negative line %d: %w", i, e.Line, ErrInvalid)
		}
	}
	return nil
}

// ParseResult decodes a result file's content strictly: exactly one JSON
// object, no unknown fields, no trailing data, and a valid Result. Errors wrap
// ErrInvalid.
func ParseResult(data []byte) (Result, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return Result{}, fmt.Errorf("decode result: %w: %w", ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Result{}, fmt.Errorf("decode result: trailing data after the object: %w", ErrInvalid)
	}
	if err := r.Validate(); err != nil {
		return Result{}, fmt.Errorf("decode result: %w", err)
	}
	return r, nil
}

// ReadResult reads and validates the result file at path. A missing file
// returns an error wrapping os.ErrNotExist; bad content returns one wrapping
// ErrInvalid that names the file.
func ReadResult(path string) (Result, error) {
	data, _, err := readLimited(path)
	if err != nil {
		return Result{}, err
	}
	r, err := ParseResult(data)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteResult validates r and writes it to path atomically.
func WriteResult(path string, r Result) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := writeAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}
