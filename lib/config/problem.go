package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

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

var (
	// badTypeRe matches the decoder's type mismatch, which speaks of Go:
	// "incompatible types: TOML value has type string; destination has
	// type integer".
	badTypeRe = regexp.MustCompile(`^incompatible types: TOML value has type (.+); destination has type (.+)$`)
	// notTableRe matches a table key given a plain value.
	notTableRe = regexp.MustCompile(`^type mismatch for .+: expected table but found (.+)$`)
)

// plainDecodeMessage rewrites the decoder's type errors in the file's
// terms ("want an integer, got a string"); any other message is kept.
func plainDecodeMessage(msg string) string {
	if m := badTypeRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("want %s, got %s", tomlTypeName(m[2]), tomlTypeName(m[1]))
	}
	if m := notTableRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("want a table, got %s", tomlTypeName(m[1]))
	}
	return msg
}

// tomlTypeName names a decoder type (a Go type of a TOML value, or the
// decoder's name of a destination) as TOML calls it, with its article.
func tomlTypeName(t string) string {
	switch strings.ReplaceAll(t, "interface {}", "any") {
	case "string", "primitive (string-like)":
		return "a string"
	case "int64", "integer":
		return "an integer"
	case "float64", "float":
		return "a number"
	case "bool", "boolean":
		return "true or false"
	case "[]any", "slice":
		return "an array"
	case "map[string]any", "map":
		return "a table"
	case "[]map[string]any":
		return "an array of tables"
	case "time.Time", "toml.LocalDate", "toml.LocalDatetime", "toml.LocalTime":
		return "a date or time"
	}
	return t
}
