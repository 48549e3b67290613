package claude_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
)

func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("after 2h: %w", claude.ErrTimeout), "claude.timeout"},
		{&claude.CrashError{ExitCode: 2}, "claude.crashed"},
		{claude.ErrNoResult, "claude.no_result"},
		{claude.ErrMaxTurns, "claude.max_turns"},
		{claude.ErrSessionNotFound, "claude.session_not_found"},
		{fmt.Errorf("claude run: %w", context.Canceled), "claude.canceled"},
		{claude.ErrBackend, "claude.invalid"},
		{fmt.Errorf("start claude: boom"), "claude.error"},
	}
	for _, tc := range tests {
		if got := claude.Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestOptionsApplyEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    claude.Options
		wantErr bool
	}{
		{name: "unset keeps fields", env: nil, want: claude.Options{Bin: "keep"}},
		{
			name: "seconds and durations",
			env:  map[string]string{"CLAUDE_BIN": "/opt/claude", "CLAUDE_IDLE_GRACE": "45", "CLAUDE_TIMEOUT": "90m"},
			want: claude.Options{Bin: "/opt/claude", IdleGrace: 45 * time.Second, Timeout: 90 * time.Minute},
		},
		{name: "garbage", env: map[string]string{"CLAUDE_TIMEOUT": "soon"}, wantErr: true},
		{name: "zero", env: map[string]string{"CLAUDE_IDLE_GRACE": "0"}, wantErr: true},
	}
	for _, tc := range tests {
		o := claude.Options{Bin: "keep"}
		err := o.ApplyEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v", tc.name, err)
			continue
		}
		if !tc.wantErr && (o.Bin != tc.want.Bin || o.IdleGrace != tc.want.IdleGrace || o.Timeout != tc.want.Timeout) {
			t.Errorf("%s: got %+v", tc.name, o)
		}
	}
}
