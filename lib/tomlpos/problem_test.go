package tomlpos_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/tomlpos"
)

func TestProblems(t *testing.T) {
	sentinel := errors.New("bad")
	ps := tomlpos.Problems{
		{File: "a.toml", Line: 3, Key: "ci.x", Msg: "unknown key", Err: sentinel},
		{File: "a.toml", Msg: "required key is missing"},
	}
	if got, want := ps.Error(), "a.toml:3: ci.x: unknown key\na.toml: required key is missing"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(ps.Err(), sentinel) {
		t.Error("errors.Is does not reach a member's sentinel")
	}
	var p *tomlpos.Problem
	if !errors.As(ps.Err(), &p) || p.Key != "ci.x" {
		t.Errorf("errors.As = %+v", p)
	}
	if (tomlpos.Problems{}).Err() != nil {
		t.Error("no problems must be a nil error")
	}
}
