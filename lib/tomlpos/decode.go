package tomlpos

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// typeErrRe matches the text of the decoder's type mismatch errors, which
// carry their position only in the message:
// `toml: line 3 (last key "version"): incompatible types: …`.
var typeErrRe = regexp.MustCompile(`(?s)^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// DecodeError locates an error returned by toml.Decode and friends: the
// 1-based line it points at (0 when unknown), the dotted key the decoder
// was at (may be empty) and the message without position or "toml: "
// prefix. Syntax errors (toml.ParseError, by value or pointer) and type
// mismatches are located; any other error yields line 0, no key and its
// text.
func DecodeError(err error) (line int, key, msg string) {
	if err == nil {
		return 0, "", ""
	}
	var pe toml.ParseError
	var ppe *toml.ParseError
	switch {
	case errors.As(err, &ppe) && ppe != nil:
		return ppe.Position.Line, ppe.LastKey, ppe.Message
	case errors.As(err, &pe):
		return pe.Position.Line, pe.LastKey, pe.Message
	}
	if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, m[2], m[3]
	}
	return 0, "", strings.TrimPrefix(err.Error(), "toml: ")
}
