package dev

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestInFlightFillsPerTick: with InFlight 2 one tick claims two issues,
// and no third while both are in flight.
func TestInFlightFillsPerTick(t *testing.T) {
	h := newHarness(t, pushing, func(o *Options) { o.Limits.InFlight = 2 })
	a := h.f.addIssue("first", "x", forge.LabelBacklog)
	b := h.f.addIssue("second", "x", forge.LabelBacklog)
	c := h.f.addIssue("third", "x", forge.LabelBacklog)
	h.tick()
	h.wantStage(a, StageAwaitingCI)
	h.wantStage(b, StageAwaitingCI)
	h.tick()
	if _, ok := h.state(c); ok {
		t.Fatal("took a third issue with two in flight")
	}
}

// TestNotReadyClaimsNothing: while Ready fails, nothing is claimed; once
// it passes, the queue moves.
func TestNotReadyClaimsNothing(t *testing.T) {
	var down bool
	h := newHarness(t, pushing, func(o *Options) {
		o.Ready = func(context.Context) error {
			if down {
				return errors.New("backend unreachable")
			}
			return nil
		}
	})
	down = true
	n := h.f.addIssue("first", "x", forge.LabelBacklog)
	h.tick()
	if _, ok := h.state(n); ok || len(h.r.Calls()) != 0 {
		t.Fatal("claimed work while not ready")
	}
	h.wantLabels(n, forge.LabelBacklog)
	down = false
	h.tick()
	h.wantStage(n, StageAwaitingCI)
}

// TestStateDirOption: an agent with its own state dir keeps its states
// there, not in the project's default one.
func TestStateDirOption(t *testing.T) {
	var dir string
	h := newHarness(t, pushing, func(o *Options) {
		dir = filepath.Join(o.DataDir, "state", o.Project, "local", "llama")
		o.StateDir = dir
	})
	n := h.f.addIssue("first", "x", forge.LabelBacklog)
	h.tick()
	h.wantStage(n, StageAwaitingCI)
	if got, _ := (store{root: dir}).list(); len(got) != 1 || got[0] != n {
		t.Errorf("states in %s: %v", dir, got)
	}
	if got, _ := (store{root: filepath.Join(h.data, "state", "proj")}).list(); len(got) != 0 {
		t.Errorf("states in the default dir: %v", got)
	}
}
