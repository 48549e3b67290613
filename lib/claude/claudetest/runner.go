package claudetest

import (
	"context"
	"sync"

	"github.com/disinto/disinto/lib/claude"
)

// Scripted is an in-process claude.Runner for fast unit tests of agents: it
// records every invocation and answers with Script (the n-th call has
// n = 0, 1, ...). A nil Script answers with a successful empty result.
type Scripted struct {
	// Script decides each call's outcome; it may write files into inv.Dir
	// (a phase file, a commit) or block until ctx ends.
	Script func(ctx context.Context, n int, inv claude.Invocation) (claude.Result, error)

	mu    sync.Mutex
	calls []claude.Invocation
}

var _ claude.Runner = (*Scripted)(nil)

// Run implements claude.Runner.
func (r *Scripted) Run(ctx context.Context, inv claude.Invocation) (claude.Result, error) {
	r.mu.Lock()
	n := len(r.calls)
	r.calls = append(r.calls, inv)
	r.mu.Unlock()
	if r.Script == nil {
		return claude.Result{SessionID: "00000000-0000-4000-8000-000000000000", Subtype: "success", HasResult: true}, nil
	}
	return r.Script(ctx, n, inv)
}

// Calls returns a copy of the invocations so far.
func (r *Scripted) Calls() []claude.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]claude.Invocation(nil), r.calls...)
}
