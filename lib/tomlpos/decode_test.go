package tomlpos_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/tomlpos"
)

type target struct {
	Version int `toml:"version"`
	CI      struct {
		ID       int64    `toml:"id"`
		Interval duration `toml:"interval"`
	} `toml:"ci"`
}

type duration time.Duration

func (d *duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("not a string")
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q", s)
	}
	*d = duration(p)
	return nil
}

func decode(src string) error {
	var t target
	_, err := toml.Decode(src, &t)
	return err
}

func TestDecodeError(t *testing.T) {
	pe := toml.ParseError{Message: "boom", LastKey: "a.b", Position: toml.Position{Line: 7}}
	tests := []struct {
		name string
		err  error
		line int
		key  string
		msg  string
	}{
		{"syntax error", decode("version = 1\nversion 2\n"), 2, "", "expected '.' or '=', but got '2' instead"},
		{"syntax error after key", decode("version = 1\nid = \"open\n"), 2, "id", "strings cannot contain newlines"},
		{"bad escape", decode("version = 1\n[ci]\nid = \"\\d\"\n"), 3, "ci.id", "invalid escape in string '\\d'"},
		{"type mismatch", decode("version = \"one\"\n"), 1, "version", "incompatible types: TOML value has type string; destination has type integer"},
		{"nested type mismatch", decode("[ci]\n\nid = true\n"), 3, "ci.id", "incompatible types: TOML value has type bool; destination has type integer"},
		{"unmarshaler error", decode("[ci]\ninterval = \"soon\"\n"), 2, "ci.interval", `bad duration "soon"`},
		{"parse error by pointer", fmt.Errorf("load: %w", &pe), 7, "a.b", "boom"},
		{"wrapped parse error", fmt.Errorf("load: %w", pe), 7, "a.b", "boom"},
		{"mismatch without line", errors.New(`toml: (last key "x"): incompatible types`), 0, "x", "incompatible types"},
		{"other", errors.New("toml: cannot decode to non-pointer"), 0, "", "cannot decode to non-pointer"},
		{"plain", errors.New("read failed"), 0, "", "read failed"},
		{"nil", nil, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, key, msg := tomlpos.DecodeError(tt.err)
			if line != tt.line || key != tt.key || msg != tt.msg {
				t.Errorf("DecodeError(%v) = %d, %q, %q; want %d, %q, %q", tt.err, line, key, msg, tt.line, tt.key, tt.msg)
			}
		})
	}
}
