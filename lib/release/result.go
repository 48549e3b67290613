package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ResultMarker starts the release job's result line in its log.
const ResultMarker = "DISINTO_RELEASE_RESULT "

// Statuses of a release.
const (
	StatusReleased = "released" // tagged, every mirror pushed or skipped
	StatusPartial  = "partial"  // tagged, a mirror push failed
	StatusFailed   = "failed"   // not tagged
)

// How the tag came to be.
const (
	TagCreated  = "created"
	TagExisting = "existing" // on the commit already: an earlier run's
)

// Mirror states, besides "failed: <reason>".
const (
	MirrorOK      = "ok"
	MirrorSkipped = "skipped"
	mirrorFailed  = "failed: "
)

// ErrBadResult: the job's result line is missing or does not describe the
// release it was given.
var ErrBadResult = errors.New("release result")

// Result is what a release job reports, validated against its Job.
type Result struct {
	Version string            `json:"version"`
	SHA     string            `json:"sha"`
	Tag     string            `json:"tag"`
	Mirrors map[string]string `json:"mirrors"`
	Status  string            `json:"status"`
	Reason  string            `json:"reason"`
}

// ParseResult finds the last result line of log and checks it against j:
// the same version and commit, a known status that agrees with the tag
// and the mirrors, and a state for every mirror of j and no other.
func ParseResult(log string, j Job) (Result, error) {
	var line string
	for l := range strings.SplitSeq(log, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), ResultMarker); ok {
			line = rest
		}
	}
	if line == "" {
		return Result{}, fmt.Errorf("%w: the job printed no %sline", ErrBadResult, ResultMarker)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadResult, err)
	}
	if err := r.check(j); err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadResult, err)
	}
	return r, nil
}

// check validates r against j.
func (r Result) check(j Job) error {
	switch {
	case r.Version != j.Version:
		return fmt.Errorf("version %q, released %q", r.Version, j.Version)
	case r.SHA != j.SHA:
		return fmt.Errorf("commit %q, released %q", r.SHA, j.SHA)
	}
	anyFailed := false
	for name, state := range r.Mirrors {
		if !slices.Contains(j.Mirrors, name) {
			return fmt.Errorf("mirror %q is not one of the release's", name)
		}
		switch {
		case state == MirrorOK, state == MirrorSkipped:
		case strings.HasPrefix(state, mirrorFailed):
			anyFailed = true
		default:
			return fmt.Errorf("mirror %s: state %q", name, state)
		}
	}
	tagged := r.Tag == TagCreated || r.Tag == TagExisting
	switch r.Status {
	case StatusFailed:
		if r.Reason == "" {
			return errors.New("a failed release names no reason")
		}
		return nil
	case StatusReleased, StatusPartial:
	default:
		return fmt.Errorf("status %q", r.Status)
	}
	if !tagged {
		return fmt.Errorf("status %s with tag %q", r.Status, r.Tag)
	}
	if len(r.Mirrors) != len(j.Mirrors) {
		return fmt.Errorf("%d mirror states for %d mirrors", len(r.Mirrors), len(j.Mirrors))
	}
	if anyFailed != (r.Status == StatusPartial) {
		return fmt.Errorf("status %s with mirrors %v", r.Status, r.Mirrors)
	}
	return nil
}

// ParseReport decodes a report recorded by the dispatcher (Result.JSON).
func ParseReport(s string) (Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Result{}, fmt.Errorf("%w: report: %v", ErrBadResult, err)
	}
	return r, nil
}

// Succeeded reports whether the release tagged its commit.
func (r Result) Succeeded() bool { return r.Status == StatusReleased || r.Status == StatusPartial }

// JSON is r as one line, for the vault's result record.
func (r Result) JSON() string {
	b, _ := json.Marshal(r) // strings and a map of strings: cannot fail
	return string(b)
}
