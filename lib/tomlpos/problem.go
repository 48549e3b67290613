package tomlpos

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong in a configuration file: where it is, which
// key it concerns and what is wrong. Err is a sentinel callers decide on
// with errors.Is.
type Problem struct {
	File string // path of the file (or a pseudo-file such as "environment")
	Line int    // 1-based; 0 when no line applies (a missing key)
	Key  string // dotted key, e.g. "ci.woodpecker_repo_id"; may be empty
	Msg  string
	// Fix says what to change, when the finder knows more than the
	// message does; not part of Error.
	Fix string
	Err error
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

// Unwrap returns the sentinel.
func (p *Problem) Unwrap() error { return p.Err }

// Problems is every problem found in one pass, returned as one error.
type Problems []*Problem

// Error joins the problems, one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem to errors.Is and errors.As.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// Err returns ps as an error, or nil when there is no problem.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
