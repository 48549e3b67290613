// Package claude runs `claude -p` sessions: it builds the argv and an
// allowlisted environment, starts the CLI in its own process group, parses
// the stream-json events as they arrive, enforces the post-result idle grace
// and the hard timeout, bounds concurrency per model backend and returns a
// typed Result together with the CLI's own exit code.
package claude

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/sandbox"
)

// Runner runs one claude session to completion.
//
// Run blocks until the CLI has exited and every process of its group is
// gone. It returns the parsed result whenever the CLI printed one, even
// together with an error (ErrMaxTurns, ErrTimeout after a late result). The
// error is nil only when a result event was seen and its subtype is not a
// turn-limit failure; callers decide what IsError means for them. Sentinels:
// ErrTimeout, ErrCrashed (as *CrashError), ErrNoResult, ErrMaxTurns,
// ErrSessionNotFound, ErrBackend, or the context's error when ctx ended.
// Implementations are safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, inv Invocation) (Result, error)
}

// Sentinel errors returned by Run, checked with errors.Is.
var (
	// ErrTimeout means the hard ceiling (Invocation.Timeout or the runner's
	// default) expired and the process group was killed.
	ErrTimeout = errors.New("claude timed out")
	// ErrCrashed means the CLI exited non-zero (or was killed by a signal)
	// without printing a result event. The error is a *CrashError.
	ErrCrashed = errors.New("claude crashed")
	// ErrNoResult means the CLI exited 0 without a result event (garbage or
	// truncated output).
	ErrNoResult = errors.New("claude printed no result")
	// ErrMaxTurns means the session stopped at --max-turns; the Result is
	// returned alongside.
	ErrMaxTurns = errors.New("claude hit max turns")
	// ErrSessionNotFound means --resume named a conversation the CLI does
	// not have (lost transcript, different directory, invalid id).
	ErrSessionNotFound = errors.New("claude session not found")
	// ErrBackend means the invocation named a backend that is not
	// configured.
	ErrBackend = errors.New("unknown claude backend")
	// ErrInvalid means the invocation itself is unusable (no prompt, no
	// directory).
	ErrInvalid = errors.New("invalid claude invocation")
	// ErrAuth means the model backend rejected the credentials (HTTP 401
	// or 403): permanent until someone fixes them.
	ErrAuth = errors.New("claude backend rejected the credentials")
	// ErrRateLimited means the backend kept answering 429 until the CLI
	// gave up: transient.
	ErrRateLimited = errors.New("claude backend rate limit")
	// ErrOverloaded means the backend kept failing (529, 5xx) until the
	// CLI gave up: transient.
	ErrOverloaded = errors.New("claude backend overloaded")
	// ErrBudgetExhausted means a budget of the run, its issue or its
	// project's day is spent: the work waits (transient) until the day
	// rolls over or the budget is raised.
	ErrBudgetExhausted = errors.New("model budget exhausted")
)

// APIError is a run that ended on an error of the model API. It unwraps
// to ErrAuth, ErrRateLimited or ErrOverloaded.
type APIError struct {
	Status int    // the API's HTTP status
	Text   string // what the CLI said, redacted
}

// Error implements error.
func (e *APIError) Error() string {
	return fmt.Sprintf("model API error %d: %s", e.Status, e.Text)
}

// Unwrap returns the sentinel of the status.
func (e *APIError) Unwrap() error {
	switch {
	case e.Status == 401 || e.Status == 403:
		return ErrAuth
	case e.Status == 429:
		return ErrRateLimited
	}
	return ErrOverloaded
}

// Transient reports whether err is worth retrying later unchanged: a
// backend that is busy or down, or a budget spent, as opposed to a
// backend that refuses us.
func Transient(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrOverloaded) || errors.Is(err, ErrBudgetExhausted)
}

// CrashError reports a CLI that exited without a result event.
type CrashError struct {
	// ExitCode is the process exit code, or -1 when a signal ended it.
	ExitCode int
	// Signal names the terminating signal, if any.
	Signal string
	// Stderr is the (redacted) tail of the CLI's stderr.
	Stderr string
}

// Error implements error.
func (e *CrashError) Error() string {
	msg := fmt.Sprintf("claude crashed: exit code %d", e.ExitCode)
	if e.Signal != "" {
		msg += " (" + e.Signal + ")"
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Is makes errors.Is(err, ErrCrashed) true.
func (e *CrashError) Is(target error) bool { return target == ErrCrashed }

// Invocation describes one run of the CLI.
type Invocation struct {
	// Prompt is the user message; it is written to the CLI's stdin, so its
	// size is not limited by the argv limits.
	Prompt string
	// ResumeID continues an earlier conversation (--resume). The CLI only
	// finds it when Dir is the directory of the earlier run.
	ResumeID string
	// Dir is the working directory (the worktree); required.
	Dir string
	// Workspace, when set, confines the run: the CLI runs as the
	// workspace's identity with its home, temp and claude config
	// directories, and nothing the session started outlives the run.
	// Dir should then be inside it.
	Workspace *sandbox.Workspace
	// Model overrides the backend's model (--model).
	Model string
	// MaxTurns bounds the agentic turns (--max-turns); 0 leaves the CLI
	// default.
	MaxTurns int
	// Timeout overrides the runner's hard ceiling for this run.
	Timeout time.Duration
	// Backend names the configured backend to run against; empty selects
	// the runner's default backend.
	Backend string
	// Env holds extra variables for the agent (e.g. DISINTO_PHASE_FILE).
	// Keys the runner controls (ANTHROPIC_*, CLAUDE_CONFIG_DIR and the
	// like) cannot be overridden here.
	Env map[string]string
	// AppendSystemPrompt is passed as --append-system-prompt when set.
	AppendSystemPrompt string
	// TranscriptPath is where the redacted stream-json transcript is saved;
	// when empty and Label is set, the runner derives a path under its
	// transcript directory.
	TranscriptPath string
	// Label names the run in logs and in derived transcript file names
	// (e.g. "dev-issue-42").
	Label string
	// Logger receives per-run logs; the runner's logger when nil.
	Logger *zerolog.Logger
}

// Usage is the token accounting of a run.
type Usage struct {
	InputTokens   int64 `json:"input_tokens"`
	OutputTokens  int64 `json:"output_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
}

// Total is the sum of the four counters.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheRead + u.CacheCreation
}

// Result is what a run produced.
type Result struct {
	// SessionID is the conversation id to pass as ResumeID next time (from
	// the result event, else from the init event).
	SessionID string
	// Text is the model's final text.
	Text string
	// IsError is the CLI's is_error flag.
	IsError bool
	// Subtype is the result subtype: "success", "error_max_turns",
	// "error_during_execution", ...
	Subtype string
	// Errors holds the CLI's error messages from the result event, if any.
	Errors []string
	// CostUSD is the run's cost: the gateway's, from its metered tokens
	// and the prices of the models used, when it priced every request;
	// else the CLI's total_cost_usd.
	CostUSD float64
	// ReportedCostUSD is the CLI's own figure when the gateway priced the
	// run, kept for comparison only.
	ReportedCostUSD float64
	// Usage holds the token counters: as the model gateway metered them
	// when the runner has one, else as the CLI reported them.
	Usage Usage
	// ReportedUsage is what the CLI itself reported when the gateway
	// metered Usage, kept for comparison only.
	ReportedUsage Usage
	// NumTurns is the number of turns the CLI reports.
	NumTurns int
	// Duration is the CLI-reported duration, or the wall time when no
	// result was printed.
	Duration time.Duration
	// ExitCode is the CLI's exit code; -1 when a signal ended it.
	ExitCode int
	// HasResult reports whether a result event was seen.
	HasResult bool
	// KilledAfterResult reports that the CLI idled past the grace period
	// after its result and was killed.
	KilledAfterResult bool
	// TimedOut reports that the hard ceiling fired.
	TimedOut bool
	// APIErrorStatus is the model API's HTTP status when the run ended on
	// an API error; 0 otherwise.
	APIErrorStatus int
	// TranscriptPath is where the transcript was saved, if anywhere.
	TranscriptPath string
}

// Success reports whether the session ended its turn normally.
func (r Result) Success() bool {
	return r.HasResult && r.Subtype == "success" && !r.IsError
}

// Code maps a Run error to the dotted outcome code the ledger records:
// "" for nil, "claude.timeout", "claude.crashed", "claude.no_result",
// "claude.max_turns", "claude.session_not_found", "claude.auth",
// "claude.rate_limited", "claude.overloaded", "claude.canceled",
// "claude.invalid", else "claude.error".
func Code(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTimeout):
		return "claude.timeout"
	case errors.Is(err, ErrCrashed):
		return "claude.crashed"
	case errors.Is(err, ErrNoResult):
		return "claude.no_result"
	case errors.Is(err, ErrMaxTurns):
		return "claude.max_turns"
	case errors.Is(err, ErrSessionNotFound):
		return "claude.session_not_found"
	case errors.Is(err, ErrBudgetExhausted):
		return "budget.exhausted"
	case errors.Is(err, ErrAuth):
		return "claude.auth"
	case errors.Is(err, ErrRateLimited):
		return "claude.rate_limited"
	case errors.Is(err, ErrOverloaded):
		return "claude.overloaded"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "claude.canceled"
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrBackend):
		return "claude.invalid"
	default:
		return "claude.error"
	}
}
