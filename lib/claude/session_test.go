package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
)

const (
	sidA = "aaaaaaaa-0000-4000-8000-000000000001"
	sidB = "bbbbbbbb-0000-4000-8000-000000000002"
)

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func ok(sid string) (claude.Result, error) {
	return claude.Result{SessionID: sid, Subtype: "success", HasResult: true}, nil
}

func TestSessionStoreRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := claude.NewSessionStore(dir, fixedNow)
	k := claude.SessionKey{Project: "disinto", Subject: "issue-42"}
	if _, found, err := s.Load(k); found || err != nil {
		t.Fatalf("empty store: found=%v err=%v", found, err)
	}
	if err := s.Save(k, sidA, "/wt/42"); err != nil {
		t.Fatal(err)
	}
	got, found, err := s.Load(k)
	if err != nil || !found || got != (claude.Session{ID: sidA, Dir: "/wt/42", UpdatedAt: fixedNow()}) {
		t.Fatalf("Load = %+v %v %v", got, found, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "disinto", "sessions", "issue-42.json")); err != nil {
		t.Errorf("session file: %v", err)
	}
	for _, bad := range []struct{ k claude.SessionKey }{{claude.SessionKey{"../x", "a"}}, {claude.SessionKey{"p", "a/b"}}, {claude.SessionKey{"p", ""}}} {
		if err := s.Save(bad.k, sidA, "/"); !errors.Is(err, claude.ErrInvalid) {
			t.Errorf("Save(%+v) = %v, want ErrInvalid", bad.k, err)
		}
	}
	if err := s.Save(k, "not-a-uuid", "/"); !errors.Is(err, claude.ErrInvalid) {
		t.Errorf("Save(bad id) = %v, want ErrInvalid", err)
	}
	if err := s.Delete(k); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Load(k); found {
		t.Error("session still there after Delete")
	}
}

func TestContinue(t *testing.T) {
	t.Parallel()
	k := claude.SessionKey{Project: "p", Subject: "issue-1"}
	tests := []struct {
		name        string
		stored      string // session file content; "" = none
		script      func(n int, inv claude.Invocation) (claude.Result, error)
		wantResumes []string // ResumeID per call
		wantRecover []bool   // prompt carries the recovery summary, per call
		wantStored  string
	}{
		{
			name:        "first run starts fresh without summary",
			script:      func(int, claude.Invocation) (claude.Result, error) { return ok(sidA) },
			wantResumes: []string{""}, wantRecover: []bool{false}, wantStored: sidA,
		},
		{
			name:        "stored session is resumed",
			stored:      `{"id":"` + sidA + `","dir":"/wt"}`,
			script:      func(int, claude.Invocation) (claude.Result, error) { return ok(sidB) },
			wantResumes: []string{sidA}, wantRecover: []bool{false}, wantStored: sidB,
		},
		{
			name:   "lost session falls back to a fresh one with the summary",
			stored: `{"id":"` + sidA + `","dir":"/wt"}`,
			script: func(n int, _ claude.Invocation) (claude.Result, error) {
				if n == 0 {
					return claude.Result{SessionID: sidA, IsError: true, HasResult: true}, claude.ErrSessionNotFound
				}
				return ok(sidB)
			},
			wantResumes: []string{sidA, ""}, wantRecover: []bool{false, true}, wantStored: sidB,
		},
		{
			name:        "corrupt session file counts as lost",
			stored:      `{"id":"garbage"`,
			script:      func(int, claude.Invocation) (claude.Result, error) { return ok(sidB) },
			wantResumes: []string{""}, wantRecover: []bool{true}, wantStored: sidB,
		},
		{
			name:        "session of another directory is not resumed",
			stored:      `{"id":"` + sidA + `","dir":"/elsewhere"}`,
			script:      func(int, claude.Invocation) (claude.Result, error) { return ok(sidB) },
			wantResumes: []string{""}, wantRecover: []bool{true}, wantStored: sidB,
		},
		{
			name:   "crash keeps the stored id",
			stored: `{"id":"` + sidA + `","dir":"/wt"}`,
			script: func(int, claude.Invocation) (claude.Result, error) {
				return claude.Result{ExitCode: 1}, &claude.CrashError{ExitCode: 1}
			},
			wantResumes: []string{sidA}, wantRecover: []bool{false}, wantStored: sidA,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.stored != "" {
				p := filepath.Join(dir, "p", "sessions", "issue-1.json")
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(tc.stored), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := &claudetest.Scripted{Script: func(_ context.Context, n int, inv claude.Invocation) (claude.Result, error) {
				return tc.script(n, inv)
			}}
			store := claude.NewSessionStore(dir, fixedNow)
			_, _ = claude.Continue(context.Background(), r, store, k, claude.Invocation{Prompt: "next step", Dir: "/wt"}, "SUMMARY")
			calls := r.Calls()
			if len(calls) != len(tc.wantResumes) {
				t.Fatalf("%d calls, want %d", len(calls), len(tc.wantResumes))
			}
			for i, c := range calls {
				if c.ResumeID != tc.wantResumes[i] {
					t.Errorf("call %d ResumeID = %q, want %q", i, c.ResumeID, tc.wantResumes[i])
				}
				if got := strings.HasPrefix(c.Prompt, "SUMMARY\n\n"); got != tc.wantRecover[i] {
					t.Errorf("call %d prompt %q: recovery summary = %v, want %v", i, c.Prompt, got, tc.wantRecover[i])
				}
			}
			got, _, _ := store.Load(k)
			if got.ID != tc.wantStored {
				t.Errorf("stored id = %q, want %q", got.ID, tc.wantStored)
			}
		})
	}
}

func TestRunWithNudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		policy     claude.NudgePolicy
		max        int
		wantNudges int
	}{
		{name: "no policy", wantNudges: 0},
		{
			name: "clean tree is not nudged",
			policy: func(context.Context, claude.Invocation, claude.Result) (string, bool, error) {
				return "", false, nil
			},
			wantNudges: 0,
		},
		{
			name: "dirty tree is nudged once",
			policy: func(context.Context, claude.Invocation, claude.Result) (string, bool, error) {
				return "commit and push", true, nil
			},
			wantNudges: 1,
		},
		{
			name: "bounded by Max",
			policy: func(context.Context, claude.Invocation, claude.Result) (string, bool, error) {
				return "commit and push", true, nil
			},
			max: 3, wantNudges: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &claudetest.Scripted{Script: func(context.Context, int, claude.Invocation) (claude.Result, error) {
				return ok(sidA)
			}}
			inv := claude.Invocation{Prompt: "work", Dir: "/wt", MaxTurns: 60, Label: "dev"}
			_, n, err := claude.RunWithNudge(context.Background(), r, inv, claude.Nudge{Policy: tc.policy, Max: tc.max})
			if err != nil || n != tc.wantNudges {
				t.Fatalf("nudges = %d, err = %v; want %d", n, err, tc.wantNudges)
			}
			calls := r.Calls()
			if len(calls) != 1+tc.wantNudges {
				t.Fatalf("%d calls", len(calls))
			}
			for _, c := range calls[1:] {
				if c.ResumeID != sidA || c.MaxTurns != 50 || c.Prompt != "commit and push" {
					t.Errorf("nudge call = %+v", c)
				}
			}
		})
	}
}
