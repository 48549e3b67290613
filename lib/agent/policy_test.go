package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		code      ledger.Code
		permanent bool
	}{
		{"token rejected", fmt.Errorf("list issues: %w", &forge.StatusError{Status: 401}), ledger.CodeForgeUnauthorized, true},
		{"forbidden", &forge.StatusError{Status: 403}, agent.CodeForgeForbidden, true},
		{"forge down", fmt.Errorf("list: %w", forge.ErrUnavailable), ledger.CodeForgeUnavailable, false},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ledger.CodeForgeUnavailable, false},
		{"model auth", &claude.APIError{Status: 401}, ledger.CodeClaudeAuth, true},
		{"model rate limit", &claude.APIError{Status: 429}, agent.CodeClaudeRateLimit, false},
		{"model overloaded", &claude.APIError{Status: 529}, agent.CodeClaudeOverloaded, false},
		{"git network", &git.Error{Args: []string{"fetch"}, Stderr: "fatal: unable to access 'http://forge/': Failed to connect"}, agent.CodeGitUnavailable, false},
		{"git auth", &git.Error{Args: []string{"push"}, Stderr: "fatal: Authentication failed for 'http://forge/'"}, agent.CodeGitUnauthorized, true},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), agent.CodeTickTimeout, false},
		{"coded", codedErr{}, ledger.CodeForgeUnavailable, false},
		{"bug", errors.New("nil map"), ledger.CodeEngineTick, false},
	} {
		code, permanent := agent.Classify(tc.err)
		if code != tc.code || permanent != tc.permanent {
			t.Errorf("%s: Classify = %s, %v; want %s, %v", tc.name, code, permanent, tc.code, tc.permanent)
		}
	}
}

// Unavailable is the forge's or the network's transient failures only:
// not a rejected token, a model backend, or a bug.
func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"forge down", fmt.Errorf("list: %w", forge.ErrUnavailable), true},
		{"git network", &git.Error{Args: []string{"fetch"}, Stderr: "fatal: unable to access 'http://forge/': Failed to connect"}, true},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"token rejected", &forge.StatusError{Status: 401}, false},
		{"git auth", &git.Error{Args: []string{"push"}, Stderr: "fatal: Authentication failed"}, false},
		{"model overloaded", &claude.APIError{Status: 529}, false},
		{"bug", errors.New("nil map"), false},
	} {
		if _, got := agent.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFailureStreakIsSaidOnce: a job that keeps failing the same way logs
// one error line for the whole streak, records every failure, and says
// once that it recovered.
func TestFailureStreakIsSaidOnce(t *testing.T) {
	var logs bytes.Buffer
	led := &ledgertest.Memory{}
	rt := agent.New(agent.Options{Ledger: led, Log: zerolog.New(&logs)})
	down := func(context.Context, *agent.Run) error { return fmt.Errorf("list issues: %w", forge.ErrUnavailable) }
	for range 5 {
		err := rt.Tick(context.Background(), tickFunc(down), proj, config.RoleDev, agent.CauseSchedule)
		var te *agent.TickError
		if !errors.As(err, &te) || te.Code != ledger.CodeForgeUnavailable || te.Permanent {
			t.Fatalf("tick error %v", err)
		}
	}
	if f := rt.Failing(); len(f) != 1 || f[0].Count != 5 || f[0].Code != ledger.CodeForgeUnavailable {
		t.Fatalf("Failing = %+v", f)
	}
	if n := strings.Count(logs.String(), `"level":"error"`); n != 1 {
		t.Errorf("%d error lines for one streak of 5, want 1:\n%s", n, logs.String())
	}
	if n := len(led.Records()); n != 5 {
		t.Errorf("%d ledger records, want 5", n)
	}
	// Another kind of failure starts a streak of its own.
	backend := func(context.Context, *agent.Run) error { return &claude.APIError{Status: 401} }
	_ = rt.Tick(context.Background(), tickFunc(backend), proj, config.RoleDev, agent.CauseSchedule)
	if n := strings.Count(logs.String(), `"level":"error"`); n != 2 {
		t.Errorf("%d error lines after a new kind of failure, want 2", n)
	}
	// A rejected forge token is said by whoever holds it (the daemon's
	// gate): a warning here.
	unauthorized := func(context.Context, *agent.Run) error { return &forge.StatusError{Status: 401} }
	_ = rt.Tick(context.Background(), tickFunc(unauthorized), proj, config.RoleDev, agent.CauseSchedule)
	if n := strings.Count(logs.String(), `"level":"error"`); n != 2 || !strings.Contains(logs.String(), "forge token rejected") {
		t.Errorf("a rejected token: %d error lines, want still 2:\n%s", n, logs.String())
	}
	ok := func(context.Context, *agent.Run) error { return nil }
	if err := rt.Tick(context.Background(), tickFunc(ok), proj, config.RoleDev, agent.CauseSchedule); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "agent runs succeed again") || len(rt.Failing()) != 0 {
		t.Errorf("recovery not said or streak kept: %+v", rt.Failing())
	}
}

// TestTickDeadline: a tick past its deadline is cancelled and recorded as
// engine.tick_timeout, while work it started keeps running.
func TestTickDeadline(t *testing.T) {
	led := &ledgertest.Memory{}
	rt := agent.New(agent.Options{Ledger: led, Log: zerolog.Nop(), TickTimeout: 50 * time.Millisecond})
	workCtx := make(chan context.Context, 1)
	stuck := func(ctx context.Context, run *agent.Run) error {
		run.Go(ctx, "w", func(ctx context.Context) { workCtx <- ctx })
		<-ctx.Done() // a forge call that never answers
		return ctx.Err()
	}
	err := rt.Tick(context.Background(), tickFunc(stuck), proj, config.RoleDev, agent.CauseSchedule)
	var te *agent.TickError
	if !errors.As(err, &te) || te.Code != agent.CodeTickTimeout {
		t.Fatalf("tick error %v", err)
	}
	if recs := led.Records(); len(recs) != 1 || recs[0].Code != agent.CodeTickTimeout {
		t.Fatalf("records %+v", recs)
	}
	if ctx := <-workCtx; ctx.Err() != nil {
		t.Errorf("the tick's deadline ended its work too: %v", ctx.Err())
	}
	if err := rt.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
