package config

import (
	"errors"

	"github.com/disinto/disinto/lib/tomlpos"
)

// ErrInvalid is wrapped by every validation problem, so callers can tell a
// bad configuration from an I/O failure with errors.Is.
var ErrInvalid = errors.New("invalid configuration")

// Problem is one thing wrong with a configuration file or the
// environment: file, line, key and message. Every problem Load and Parse
// return wraps ErrInvalid.
type Problem = tomlpos.Problem

// Problems is every problem found in one load; it is returned as an error
// when non-empty.
type Problems = tomlpos.Problems

// invalid marks every problem as a configuration problem and returns them
// as an error, or nil when there is none.
func invalid(ps Problems) error {
	for _, p := range ps {
		if p.Err == nil {
			p.Err = ErrInvalid
		}
	}
	return ps.Err()
}
