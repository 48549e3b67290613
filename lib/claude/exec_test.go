package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
)

// The test binary doubles as the fake claude (see claudetest.MaybeRunFake).
func TestMain(m *testing.M) {
	claudetest.MaybeRunFake()
	os.Exit(m.Run())
}

func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newFakeExec returns a runner whose CLAUDE_BIN is the test binary.
func newFakeExec(t *testing.T, mod func(*claude.Options)) *claude.Exec {
	t.Helper()
	opts := claude.Options{
		Bin:           self(t),
		Backends:      []claude.Backend{{Name: "anthropic", APIKey: "sk-test-key-123456", MaxSessions: 4}},
		BaseEnv:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
		IdleGrace:     time.Minute,
		Timeout:       time.Minute,
		KillGrace:     time.Second,
		TranscriptDir: t.TempDir(),
	}
	if mod != nil {
		mod(&opts)
	}
	e, err := claude.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fakeInv(t *testing.T, mode string, env map[string]string) (claude.Invocation, string) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := map[string]string{claudetest.FakeMode: mode, claudetest.FakePIDFile: pidFile}
	for k, v := range env {
		e[k] = v
	}
	return claude.Invocation{Prompt: "do the thing", Dir: dir, Env: e, Label: "test/" + mode}, pidFile
}

// assertGroupGone waits (bounded) until no live process is left in the
// fake's process group.
func assertGroupGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("fake never wrote its pid: %v", err)
	}
	pgid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := claudetest.GroupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d survived: %v", pgid, left)
		}
		<-time.After(20 * time.Millisecond)
	}
}

func TestRunParsesResult(t *testing.T) {
	t.Parallel()
	e := newFakeExec(t, nil)
	record := filepath.Join(t.TempDir(), "record.json")
	inv, pidFile := fakeInv(t, claudetest.FakeResult, map[string]string{
		claudetest.FakeRecord:  record,
		claudetest.FakeSession: "11111111-2222-3333-4444-555555555555",
		claudetest.FakeChild:   "1",
	})
	inv.Prompt = strings.Repeat("large prompt ", 100_000) // ~1.3 MB, past MAX_ARG_STRLEN
	inv.ResumeID = "99999999-2222-3333-4444-555555555555"
	inv.Model = "sonnet"
	inv.MaxTurns = 7
	inv.AppendSystemPrompt = "be brief"

	res, err := e.Run(context.Background(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := claude.Result{
		SessionID: "11111111-2222-3333-4444-555555555555", Text: "fake result", Subtype: "success",
		CostUSD: 0.0125, Usage: claude.Usage{InputTokens: 100, OutputTokens: 20, CacheRead: 5, CacheCreation: 7},
		NumTurns: 2, Duration: 1234 * time.Millisecond, HasResult: true, TranscriptPath: res.TranscriptPath,
	}
	if !reflectEqual(res, want) {
		t.Errorf("result\n got %+v\nwant %+v", res, want)
	}
	if !res.Success() {
		t.Error("Success() = false")
	}
	var rec claudetest.FakeRecordData
	readJSON(t, record, &rec)
	wantArgs := []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
		"--setting-sources=", "--strict-mcp-config", "--resume", inv.ResumeID, "--model", "sonnet", "--max-turns", "7", "--append-system-prompt", "be brief"}
	if !slices.Equal(rec.Args, wantArgs) {
		t.Errorf("args = %q, want %q", rec.Args, wantArgs)
	}
	if rec.Stdin != inv.Prompt {
		t.Errorf("stdin has %d bytes, want the %d-byte prompt", len(rec.Stdin), len(inv.Prompt))
	}
	if rec.Dir != inv.Dir {
		t.Errorf("dir = %s, want %s", rec.Dir, inv.Dir)
	}
	st, err := os.Stat(res.TranscriptPath)
	if err != nil {
		t.Fatalf("transcript: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v, want 0600", st.Mode().Perm())
	}
	tr, _ := os.ReadFile(res.TranscriptPath)
	if n := strings.Count(string(tr), "\n"); n != 3 {
		t.Errorf("transcript has %d lines, want 3:\n%s", n, tr)
	}
	assertGroupGone(t, pidFile)
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mode     string
		env      map[string]string
		opts     func(*claude.Options)
		wantErr  error
		wantExit int
		check    func(t *testing.T, res claude.Result, err error, elapsed time.Duration)
	}{
		{
			name: "exit code surfaced with result", mode: claudetest.FakeResult,
			env: map[string]string{claudetest.FakeExit: "3"}, wantExit: 3,
		},
		{
			name: "hang after result is killed after grace", mode: claudetest.FakeHangAfterResult,
			env:      map[string]string{claudetest.FakeChild: "1"},
			opts:     func(o *claude.Options) { o.IdleGrace = 300 * time.Millisecond },
			wantExit: -1,
			check: func(t *testing.T, res claude.Result, _ error, elapsed time.Duration) {
				if !res.HasResult || !res.KilledAfterResult || res.SessionID == "" {
					t.Errorf("want the result and KilledAfterResult, got %+v", res)
				}
				if elapsed > 300*time.Millisecond+5*time.Second {
					t.Errorf("took %v, want within grace + 5s", elapsed)
				}
			},
		},
		{
			name: "SIGTERM ignored escalates to SIGKILL", mode: claudetest.FakeHangAfterResult,
			env: map[string]string{claudetest.FakeIgnoreTerm: "1", claudetest.FakeChild: "1"},
			opts: func(o *claude.Options) {
				o.IdleGrace = 100 * time.Millisecond
				o.KillGrace = 300 * time.Millisecond
			},
			wantExit: -1,
			check: func(t *testing.T, res claude.Result, _ error, _ time.Duration) {
				if !res.KilledAfterResult {
					t.Errorf("want KilledAfterResult, got %+v", res)
				}
			},
		},
		{
			name: "timeout", mode: claudetest.FakeForever, env: map[string]string{claudetest.FakeChild: "1"},
			opts:    func(o *claude.Options) { o.Timeout = 2 * time.Second },
			wantErr: claude.ErrTimeout, wantExit: -1,
			check: func(t *testing.T, res claude.Result, _ error, _ time.Duration) {
				if !res.TimedOut || res.HasResult || res.SessionID == "" {
					t.Errorf("want TimedOut, no result, init session id; got %+v", res)
				}
			},
		},
		{
			name: "crash", mode: claudetest.FakeCrash, env: map[string]string{claudetest.FakeExit: "5"},
			wantErr: claude.ErrCrashed, wantExit: 5,
			check: func(t *testing.T, _ claude.Result, err error, _ time.Duration) {
				var ce *claude.CrashError
				if !errors.As(err, &ce) || ce.ExitCode != 5 || !strings.Contains(ce.Stderr, "simulated crash") {
					t.Errorf("want *CrashError with exit 5 and stderr, got %#v", err)
				}
			},
		},
		{name: "garbage", mode: claudetest.FakeGarbage, wantErr: claude.ErrNoResult},
		{
			name: "max turns", mode: claudetest.FakeResult,
			env:     map[string]string{claudetest.FakeSubtype: "error_max_turns"},
			wantErr: claude.ErrMaxTurns,
			check: func(t *testing.T, res claude.Result, _ error, _ time.Duration) {
				if !res.HasResult || res.Subtype != "error_max_turns" || res.Success() {
					t.Errorf("want the max-turns result returned, got %+v", res)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newFakeExec(t, tc.opts)
			inv, pidFile := fakeInv(t, tc.mode, tc.env)
			start := time.Now()
			res, err := e.Run(context.Background(), inv)
			elapsed := time.Since(start)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if res.ExitCode != tc.wantExit {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tc.wantExit)
			}
			if tc.check != nil {
				tc.check(t, res, err, elapsed)
			}
			assertGroupGone(t, pidFile)
		})
	}
}

func TestRunContextCancelKillsGroup(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	obs := &observer{started: started}
	e := newFakeExec(t, func(o *claude.Options) { o.Observer = obs })
	inv, pidFile := fakeInv(t, claudetest.FakeForever, map[string]string{claudetest.FakeChild: "1"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		waitFile(t, pidFile)
		cancel()
	}()
	_, err := e.Run(ctx, inv)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertGroupGone(t, pidFile)
}

func waitFile(t *testing.T, p string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return
		}
		<-time.After(10 * time.Millisecond)
	}
	t.Errorf("%s never appeared", p)
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// observer counts concurrent sessions per backend.
type observer struct {
	mu        sync.Mutex
	running   int
	max       int
	waits     []time.Duration
	ended     int
	started   chan struct{}
	startOnce sync.Once
}

func (o *observer) SlotWait(_ string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waits = append(o.waits, d)
}

func (o *observer) SessionStarted(string) {
	o.mu.Lock()
	o.running++
	o.max = max(o.max, o.running)
	o.mu.Unlock()
	if o.started != nil {
		o.startOnce.Do(func() { close(o.started) })
	}
}

func (o *observer) SessionEnded(string, claude.Result, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running--
	o.ended++
}

func reflectEqual(a, b claude.Result) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
