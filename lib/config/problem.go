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
		if p.Fix == "" {
			p.Fix = defaultFix(p)
		}
	}
	return ps.Err()
}

// defaultFix is the fix of a problem whose finder named none: where to
// change what.
func defaultFix(p *Problem) string {
	switch {
	case p.File == "environment" && p.Key != "":
		return fmt.Sprintf("correct %s in the env file or the process environment (.env.example documents it)", p.Key)
	case p.Key != "" && p.Line > 0:
		return fmt.Sprintf("correct %s on line %d of %s (projects/example.toml.example documents it)", p.Key, p.Line, p.File)
	case p.Key != "":
		return fmt.Sprintf("set %s in %s (projects/example.toml.example documents it)", p.Key, p.File)
	}
	return fmt.Sprintf("correct %s as the message says", p.File)
}

// decodeFix is the fix of a value of the wrong type at key, want being
// what plainDecodeMessage says the file wants.
func decodeFix(key, want string) string {
	switch want {
	case "true or false":
		leaf, table := key, ""
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			leaf, table = key[i+1:], " under ["+key[:i]+"]"
		}
		return fmt.Sprintf("write %s as true or false, without quotes (%s = true%s)", key, leaf, table)
	case "a string":
		return fmt.Sprintf("put the value of %s in double quotes", key)
	case "an integer":
		return fmt.Sprintf("write %s as a whole number, without quotes", key)
	case "":
		return ""
	}
	return fmt.Sprintf("write %s as %s (projects/example.toml.example shows it)", key, want)
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
// terms ("want an integer, got a string"), and says what the file wants
// ("" for any other message, which is kept).
func plainDecodeMessage(msg string) (plain, want string) {
	if m := badTypeRe.FindStringSubmatch(msg); m != nil {
		want = tomlTypeName(m[2])
		return fmt.Sprintf("want %s, got %s", want, tomlTypeName(m[1])), want
	}
	if m := notTableRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("want a table, got %s", tomlTypeName(m[1])), "a table"
	}
	return msg, ""
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
