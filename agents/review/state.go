package review

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

// prState is what the reviewer remembers about one pull request. It is a
// cache of what the forge shows (markers and formal reviews) plus the
// session id; losing it costs a few forge reads and a fresh session, never
// a duplicate review.
type prState struct {
	PR int64 `json:"pr"`
	// Head is the last head SHA a review was produced for.
	Head string `json:"head,omitempty"`
	// Verdict and Output are the review produced for Head.
	Verdict verdict.Verdict `json:"verdict,omitempty"`
	Output  *verdict.Output `json:"output,omitempty"`
	// Previous is the head reviewed before Head (re-review context).
	Previous string `json:"previous,omitempty"`
	Round    int    `json:"round,omitempty"`
	// CommentPosted and FormalPosted track publishing, so a review that
	// was half published is completed without asking the model again.
	CommentPosted bool `json:"comment_posted,omitempty"`
	FormalPosted  bool `json:"formal_posted,omitempty"`
	// CommentTried and FormalTried say a post was sent without an answer
	// seen: the forge may have applied it, so the next attempt looks
	// before posting again.
	CommentTried bool   `json:"comment_tried,omitempty"`
	FormalTried  bool   `json:"formal_tried,omitempty"`
	CommentBody  string `json:"comment_body,omitempty"`
	// BudgetNoted is the head whose pull request was told that a spent
	// budget holds its review.
	BudgetNoted string `json:"budget_noted,omitempty"`
	// SessionID is the review conversation, resumed on re-review.
	SessionID string `json:"session_id,omitempty"`
	// Errors counts failed attempts per head SHA (circuit breaker).
	Errors map[string]int `json:"errors,omitempty"`
	// SyncedHead is the head at which the state was last rebuilt from
	// the forge. A new head is checked against the forge once (another
	// daemon, or this one before losing its data dir, may have reviewed
	// it); after that, ticks trust the state and cost no reads.
	SyncedHead string `json:"synced_head,omitempty"`
	// CodeCheckedHead is the head whose diff was read to tell whether it
	// changes code, and NonCode the answer. Neither can change for a head,
	// so a pull request waiting for CI costs no diff per tick.
	CodeCheckedHead string `json:"code_checked_head,omitempty"`
	NonCode         bool   `json:"non_code,omitempty"`
	// CIHead, CIState and CIReads are the CI state last read for a head
	// and how many reads in a row found it so; CIReadAt is the last read.
	CIHead   string        `json:"ci_head,omitempty"`
	CIState  forge.CIState `json:"ci_state,omitempty"`
	CIReads  int           `json:"ci_reads,omitempty"`
	CIReadAt time.Time     `json:"ci_read_at,omitempty"`
}

// ciRecheck is how long a scheduled tick leaves a head alone whose CI
// state, not green, read the same twice in a row: CI that is still
// pending after two polls, or failed, rarely changes within minutes, and
// a status event (a webhook) ticks the agent at once anyway. The floor
// notices a result within ciRecheck when the event is lost. It is the
// project's [limits] ci_recheck, the default where none is set.
func ciRecheck(p *config.Project) time.Duration {
	if p == nil || p.Limits.CIRecheck <= 0 {
		return config.DefaultCIRecheck
	}
	return p.Limits.CIRecheck
}

// ciDue reports whether CI of head must be read now; only scheduled ticks
// wait, recheck at most.
func (s *prState) ciDue(head string, now time.Time, scheduled bool, recheck time.Duration) bool {
	return !scheduled || s.CIHead != head || s.CIState == forge.CISuccess || s.CIReads < 2 || now.Sub(s.CIReadAt) >= recheck
}

// readCI records a read of head's CI state.
func (s *prState) readCI(head string, st forge.CIState, now time.Time) {
	if s.CIHead != head || s.CIState != st {
		s.CIHead, s.CIState, s.CIReads = head, st, 0
	}
	s.CIReads++
	s.CIReadAt = now
}

// published reports whether the review for head is fully on the forge.
func (s *prState) published(head string) bool {
	return s.Head == head && s.CommentPosted && s.FormalPosted
}

// store keeps one JSON file per pull request under dir.
type store struct{ dir string }

func (st store) path(pr int64) string {
	return filepath.Join(st.dir, fmt.Sprintf("pr-%d.json", pr))
}

// load returns the state of pr; a missing file gives an empty, unsynced
// state.
func (st store) load(pr int64) (*prState, error) {
	s := &prState{PR: pr}
	err := atomicfile.ReadJSON(st.path(pr), s)
	if errors.Is(err, os.ErrNotExist) {
		return &prState{PR: pr}, nil
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (st store) save(s *prState) error {
	return atomicfile.WriteJSON(st.path(s.PR), s, 0o600)
}

func (st store) remove(pr int64) error {
	err := os.Remove(st.path(pr))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// list returns the pull requests that have state, sorted.
func (st store) list() ([]int64, error) {
	entries, err := os.ReadDir(st.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "pr-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(name, "pr-"), ".json"), 10, 64)
		if err == nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
