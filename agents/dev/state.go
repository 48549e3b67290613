package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/provenance"
)

// State is everything persisted about one issue's work. It is rebuildable
// from the forge (branch, pull request, labels) except the session id and
// the counters, whose loss only costs a fresh session or extra attempts.
type State struct {
	Issue     int64     `json:"issue"`
	Title     string    `json:"title"`
	Stage     Stage     `json:"stage"`
	Branch    string    `json:"branch"`
	Worktree  string    `json:"worktree"`
	SessionID string    `json:"session_id,omitempty"`
	PR        int64     `json:"pr,omitempty"`
	HeadSHA   string    `json:"head_sha,omitempty"`
	Started   time.Time `json:"started"`
	// Origin is whose word the issue's text is (lib/provenance), judged
	// when it was claimed; work from an outsider's text was claimed only
	// after a maintainer applied backlog themselves. Empty in states of
	// earlier releases.
	Origin provenance.Origin `json:"origin,omitempty"`

	// From is the stage st was in before Stage: publishing after
	// StageNudging blocks an issue that still has nothing committed.
	From Stage `json:"from,omitempty"`

	// News is the prompt the session is resumed with (StageFixing).
	News string `json:"news,omitempty"`
	// Summary is the finished session's last message, kept for its pull
	// request (StagePublishing).
	Summary string `json:"summary,omitempty"`
	// CIFixes counts code failures of CI; InfraRetries automatic retries.
	CIFixes      int `json:"ci_fixes,omitempty"`
	InfraRetries int `json:"infra_retries,omitempty"`
	// NonCodeSHA is the head whose diff was found to hold no code (docs,
	// formulas, markdown only), so a missing CI status does not hold it.
	// CodeCheckedSHA is the head whose diff was last checked.
	NonCodeSHA     string `json:"non_code_sha,omitempty"`
	CodeCheckedSHA string `json:"code_checked_sha,omitempty"`
	// ReviewRounds counts change requests; HandledReview is the newest
	// verdict acted on (its head, verdict and a hash of its text).
	ReviewRounds  int    `json:"review_rounds,omitempty"`
	HandledReview string `json:"handled_review,omitempty"`
	// ReviewedSHA is the head an approval was given for.
	ReviewedSHA string `json:"reviewed_sha,omitempty"`
	// HeldSHA is the session's head kept off the forge's branches because
	// it changes protected paths: it waits for a maintainer's approval
	// (StageHeld). PushApproved is the last head a maintainer approved
	// for a push: a later head whose protected files are still as they
	// were there needs no second approval to be pushed.
	HeldSHA      string `json:"held_sha,omitempty"`
	PushApproved string `json:"push_approved,omitempty"`
	// ProtectedSHA is the head whose pull request diff was last checked
	// for protected paths; ProtectedFiles what it touched of them.
	ProtectedSHA   string   `json:"protected_sha,omitempty"`
	ProtectedFiles []string `json:"protected_files,omitempty"`
	// HoldNote and ApprovalNote are the comments saying what the work
	// waits for a maintainer to do: on the issue (a held push) and on the
	// pull request (its merge). Human says it for status.
	HoldNote     note   `json:"hold_note,omitzero"`
	ApprovalNote note   `json:"approval_note,omitzero"`
	Human        string `json:"human,omitempty"`
	// AfterFailures counts consecutive failures to publish a finished
	// session's work; it bounds those retries.
	AfterFailures int `json:"after_failures,omitempty"`
	// StartFailures counts consecutive failures to start a session
	// (worktree, prompt); it bounds those retries too.
	StartFailures int `json:"start_failures,omitempty"`
	// BudgetNoted says the issue was told that a spent budget holds it;
	// cleared when a session runs again.
	BudgetNoted bool `json:"budget_noted,omitempty"`
	// AdvanceFailures counts consecutive ticks whose step of this issue
	// failed (forge outages aside); it bounds them so one broken issue
	// neither fails every tick forever nor floods the ledger.
	AdvanceFailures int `json:"advance_failures,omitempty"`
	// MergeAttempts counts merges refused by the forge; Rebases the
	// requests to rebase onto the primary branch.
	MergeAttempts int `json:"merge_attempts,omitempty"`
	Rebases       int `json:"rebases,omitempty"`
	// NoProgress counts fix turns in a row that left the head where it
	// was; the second blocks the issue (builder.no_progress).
	NoProgress int `json:"no_progress,omitempty"`
	// CIFailedSHA is the head whose CI failure was last counted: an
	// attempt is counted once per head.
	CIFailedSHA string `json:"ci_failed_sha,omitempty"`
	// RebasedFrom is the head the agent's own rebase replaced: a listing
	// of the forge that still shows it lags behind the push, and is no
	// news of a push by someone else.
	RebasedFrom string `json:"rebased_from,omitempty"`
	// WaitingSince is when the current wait for CI or review began.
	WaitingSince time.Time `json:"waiting_since,omitempty"`

	// Timeline is when the run reached its milestones, for the ledger.
	Timeline Timeline `json:"timeline,omitzero"`

	// Accounting summed over every session of the run.
	CostUSD      float64 `json:"cost_usd,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	Turns        int     `json:"turns,omitempty"`

	// Outcome is set when the run reaches a terminal stage; Recorded once
	// its ledger record is written.
	Reason   ledger.Reason `json:"reason,omitempty"`
	Code     ledger.Code   `json:"code,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	Recorded bool          `json:"recorded,omitempty"`

	// run is the tick, or the background work it started, that advances
	// st: its logger and ledger. Never persisted; set when a tick loads or
	// starts the state.
	run runHandle
	// closed holds the repository's closed pull requests once listed for
	// the run's first session (closedListed), for its prior art. Never
	// persisted.
	closed       []forge.PullRequest
	closedListed bool
}

// store keeps one directory per issue under root
// (<data>/state/<project>).
type store struct {
	root string
}

func (s store) dir(n int64) string {
	return filepath.Join(s.root, "issue-"+strconv.FormatInt(n, 10))
}

// load returns the state of issue n; ok is false when there is none.
func (s store) load(n int64) (State, bool, error) {
	data, err := os.ReadFile(filepath.Join(s.dir(n), "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("read state of #%d: %w", n, err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, false, fmt.Errorf("parse state of #%d: %w", n, err)
	}
	var old legacyFlags
	if err := json.Unmarshal(data, &old); err != nil {
		return State{}, false, fmt.Errorf("parse state of #%d: %w", n, err)
	}
	old.upgrade(&st)
	return st, true, nil
}

// legacyFlags are the flags earlier releases kept instead of stages.
type legacyFlags struct {
	Ran     bool `json:"ran"`
	Nudged  bool `json:"nudged"`
	Resumed bool `json:"resumed"`
}

// upgrade turns the flags of a state an earlier release wrote into the
// stages they stood for.
func (f legacyFlags) upgrade(st *State) {
	session := st.Stage == StageImplementing || st.Stage == StageFixing
	switch {
	case !session:
	case f.Ran:
		if f.Nudged {
			st.From = StageNudging
		}
		st.Stage = StagePublishing
	case f.Nudged:
		st.Stage = StageNudging
	case f.Resumed:
		st.Stage = StageResuming
	}
}

// save writes st atomically: temp file, fsync, rename.
func (s store) save(st State) error {
	dir := s.dir(st.Issue)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of #%d: %w", st.Issue, err)
	}
	return writeAtomic(filepath.Join(dir, "state.json"), data)
}

// remove deletes the issue's directory.
func (s store) remove(n int64) error {
	if err := os.RemoveAll(s.dir(n)); err != nil {
		return fmt.Errorf("remove state of #%d: %w", n, err)
	}
	return nil
}

// list returns the issue numbers that have a state directory.
func (s store) list() ([]int64, error) {
	ents, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list states: %w", err)
	}
	var out []int64
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "issue-")
		if !ok || !e.IsDir() {
			continue
		}
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}
