package phase_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/phase"
)

func TestWriteRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		phase      phase.Phase
		reason     string
		wantFile   string
		wantReason string
	}{
		{"no reason", phase.AwaitingCI, "", "PHASE:awaiting_ci\n", ""},
		{"reason", phase.Failed, "tests fail", "PHASE:failed\nReason: tests fail\n", "tests fail"},
		{"reason folded to one line", phase.Escalate, " line one\nline two\r\n", "PHASE:escalate\nReason: line one line two\n", "line one line two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "issue.phase")
			if err := phase.Write(path, tt.phase, tt.reason); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tt.wantFile {
				t.Errorf("file = %q, want %q", raw, tt.wantFile)
			}
			st, err := phase.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase != tt.phase || st.Reason != tt.wantReason || st.ModTime.IsZero() {
				t.Errorf("Read = %+v, want phase %s reason %q", st, tt.phase, tt.wantReason)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the phase file", len(entries))
			}
		})
	}
}

func TestWriteRejectsUnknownPhase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p")
	if err := phase.Write(path, "merged", ""); !errors.Is(err, phase.ErrInvalid) {
		t.Fatalf("Write(merged) = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file written despite the error: %v", err)
	}
}

// TestWriteMissingDir: the runtime writes PHASE:crashed for issues whose
// state directory may not exist yet, so Write creates it.
func TestWriteMissingDir(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "p")
	if err := phase.Write(path, phase.Done, ""); err != nil {
		t.Fatalf("Write into a missing directory: %v", err)
	}
	if st, err := phase.Read(path); err != nil || st.Phase != phase.Done {
		t.Fatalf("Read = %+v, %v", st, err)
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := phase.Read(filepath.Join(dir, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v, want ErrNotExist", err)
	}
	if _, err := phase.Read(write("empty", "")); !errors.Is(err, phase.ErrEmpty) {
		t.Errorf("empty file: %v, want ErrEmpty", err)
	}
	bad := write("bad", "PHASE:done\nPHASE:merged\n")
	_, err := phase.Read(bad)
	var pe *phase.ParseError
	if !errors.As(err, &pe) || pe.Path != bad || pe.Line != 2 {
		t.Fatalf("bad file: %v, want ParseError at %s:2", err, bad)
	}
	if msg := err.Error(); !strings.Contains(msg, bad+":2") || !strings.Contains(msg, "PHASE:merged") {
		t.Errorf("error %q names neither the file nor the bad line", msg)
	}
	huge := write("huge", "PHASE:done\nReason: "+strings.Repeat("x", 70<<10))
	if _, err := phase.Read(huge); !errors.Is(err, phase.ErrInvalid) {
		t.Errorf("huge file: %v, want ErrInvalid", err)
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p")
	if err := phase.Clear(path); err != nil {
		t.Fatalf("Clear(absent) = %v", err)
	}
	if err := phase.Write(path, phase.Done, ""); err != nil {
		t.Fatal(err)
	}
	if err := phase.Clear(path); err != nil {
		t.Fatal(err)
	}
	if _, err := phase.Read(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read after Clear = %v, want ErrNotExist", err)
	}
}

// waitResult is what a background Wait returned.
type waitResult struct {
	state phase.State
	err   error
}

// startWait runs phase.Wait in the background with a tick channel the test
// drives by hand.
func startWait(ctx context.Context, path string, known phase.State) (chan<- time.Time, <-chan waitResult) {
	tick := make(chan time.Time)
	done := make(chan waitResult, 1)
	go func() {
		s, err := phase.Wait(ctx, path, known, tick)
		done <- waitResult{s, err}
	}()
	return tick, done
}

// settle makes sure Wait has completed a whole check of the file as it is
// now, and fails the test if Wait returned. Wait takes a tick only between
// checks, so after two accepted ticks one check has started and ended after
// the call began.
func settle(t *testing.T, tick chan<- time.Time, done <-chan waitResult) {
	t.Helper()
	for range 2 {
		select {
		case tick <- time.Time{}:
		case r := <-done:
			t.Fatalf("Wait returned early: %+v, %v", r.state, r.err)
		}
	}
}

// result ticks until Wait returns.
func result(tick chan<- time.Time, done <-chan waitResult) waitResult {
	for {
		select {
		case tick <- time.Time{}:
		case r := <-done:
			return r
		}
	}
}

func TestWaitSeesNewPhase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p")
	tick, done := startWait(t.Context(), path, phase.State{})

	settle(t, tick, done) // an absent file is waited out
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	settle(t, tick, done) // so is an empty one
	if err := phase.Write(path, phase.AwaitingCI, ""); err != nil {
		t.Fatal(err)
	}
	r := result(tick, done)
	if r.err != nil || r.state.Phase != phase.AwaitingCI {
		t.Fatalf("Wait = %+v, %v; want awaiting_ci", r.state, r.err)
	}
}

func TestWaitIgnoresKnownState(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p")
	if err := phase.Write(path, phase.AwaitingCI, ""); err != nil {
		t.Fatal(err)
	}
	known, err := phase.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	tick, done := startWait(t.Context(), path, known)
	settle(t, tick, done)

	// Rewriting the same phase later counts as a change: the model entered
	// the phase again.
	later := known.ModTime.Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	r := result(tick, done)
	if r.err != nil || r.state.Phase != phase.AwaitingCI || !r.state.ModTime.Equal(later) {
		t.Fatalf("Wait = %+v, %v; want the rewritten awaiting_ci", r.state, r.err)
	}
}

func TestWaitReportsStableGarbage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(path, []byte("PHASE:awai"), 0o644); err != nil {
		t.Fatal(err)
	}
	tick, done := startWait(t.Context(), path, phase.State{})
	// The first sighting of bad content is tolerated, the second is not.
	r := result(tick, done)
	var pe *phase.ParseError
	if !errors.As(r.err, &pe) {
		t.Fatalf("Wait error = %v, want ParseError", r.err)
	}
}

func TestWaitCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	tick, done := startWait(ctx, filepath.Join(t.TempDir(), "p"), phase.State{})
	settle(t, tick, done)
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait error = %v, want context.Canceled", r.err)
	}
}

func TestWaitTickClosed(t *testing.T) {
	t.Parallel()
	tick := make(chan time.Time)
	close(tick)
	if _, err := phase.Wait(t.Context(), filepath.Join(t.TempDir(), "p"), phase.State{}, tick); err == nil {
		t.Fatal("Wait with a closed tick channel returned nil error")
	}
}
