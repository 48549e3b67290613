package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every validation problem, so callers can tell a
// bad configuration from an I/O failure with errors.Is.
var ErrInvalid = errors.New("invalid configuration")

// Problem is one thing wrong with a configuration file: where it is and
// what is wrong.
type Problem struct {
	File string // path of the file, or "environment"
	Line int    // 1-based; 0 when the problem has no line (a missing key)
	Key  string // dotted key, e.g. "ci.woodpecker_repo_id"; may be empty
	Msg  string
}

// Error formats the problem as file:line: key: message.
func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Unwrap makes every problem match ErrInvalid.
func (p *Problem) Unwrap() error { return ErrInvalid }

// Problems is every problem found in one load; it is returned as an error
// when non-empty.
type Problems []*Problem

// Error joins the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual problems to errors.Is and errors.As.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

func (ps Problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
