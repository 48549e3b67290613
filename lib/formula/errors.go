package formula

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels wrapped by *Error, so callers and tests can decide with errors.Is.
var (
	// ErrSyntax: the file is not valid TOML or a value has the wrong type.
	ErrSyntax = errors.New("invalid toml")
	// ErrUnknownKey: a key or table the schema does not know.
	ErrUnknownKey = errors.New("unknown key")
	// ErrInvalid: a known field has a missing or unacceptable value.
	ErrInvalid = errors.New("invalid value")
	// ErrDuplicateStep: two steps share one id.
	ErrDuplicateStep = errors.New("duplicate step id")
	// ErrUnknownNeed: a step needs a step id that is not declared.
	ErrUnknownNeed = errors.New("unknown step in needs")
	// ErrCycle: the needs graph has a cycle.
	ErrCycle = errors.New("needs cycle")
	// ErrUndeclaredVar: a {{var}} placeholder has no [vars.<name>] entry.
	ErrUndeclaredVar = errors.New("undeclared variable")
	// ErrMissingVar: a required variable has no value at render time.
	ErrMissingVar = errors.New("missing required variable")
	// ErrNotFound: no formula of that name exists in any source.
	ErrNotFound = errors.New("formula not found")
)

// Error is one problem in a formula file, located at File:Line and naming
// the field it concerns. Line is 0 when no line applies.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
	Err   error // one of the sentinels above
}

// Error formats the problem as "file:line: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// ErrorList collects every problem found in one pass, in file order.
type ErrorList []*Error

// Error joins the problems, one per line.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes each problem to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Problems returns the individual problems carried by err: the members of
// an ErrorList, a single *Error, or nil when err carries neither.
func Problems(err error) []*Error {
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}

// orNil turns an empty list into a nil error.
func (l ErrorList) orNil() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
