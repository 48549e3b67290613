package formula

import (
	"errors"

	"github.com/disinto/disinto/lib/tomlpos"
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
// the field (Key) it concerns; Err is one of the sentinels above.
type Error = tomlpos.Problem

// ErrorList collects every problem found in one pass, in file order.
type ErrorList = tomlpos.Problems

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
