package formulaagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
)

// WatchForge is what Watch reads of the forge.
type WatchForge interface {
	GetBranch(ctx context.Context, name string) (forge.Branch, error)
	// ListIssues with Since set returns the issues updated at or after it.
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
}

// Mark is what a role saw when its last run finished: the primary
// branch's head, the newest issue update and a fingerprint of each issue
// updated at that instant (the forge's times have a resolution of a
// second, so a second update within the same second is told apart by
// what it changed), and the earliest timer the run left (a dust entry
// expiring, a retry), zero when none.
type Mark struct {
	Head    string    `json:"head"`
	Updated time.Time `json:"updated"`
	// AtUpdated holds issue number → fingerprint of the issues updated at
	// Updated.
	AtUpdated map[int64]string `json:"at_updated,omitempty"`
	Timer     time.Time        `json:"timer,omitzero"`
	// Run is when the mark was taken.
	Run time.Time `json:"run"`
}

// Observation is what Watch.Changed saw; Save it when the run it started
// succeeded.
type Observation struct {
	Mark
	// Why says what changed ("" when nothing did).
	Why string
}

// Watch decides whether a run has anything to look at, for the cost of
// two forge requests: the primary branch, and the issues updated since
// the last run (an empty page when none). A merged pull request moves the
// primary branch, so pull requests need no request of their own.
type Watch struct {
	Forge   WatchForge
	Primary string
	// File keeps the Mark between runs.
	File string
}

// Changed reports whether anything changed since the saved mark: the
// primary head, an issue update, or a timer that fell due at now. A
// missing mark counts as changed.
func (w Watch) Changed(ctx context.Context, now time.Time) (Observation, error) {
	prev, ok, err := w.load()
	if err != nil {
		return Observation{}, err
	}
	b, err := w.Forge.GetBranch(ctx, w.Primary)
	if err != nil {
		return Observation{}, fmt.Errorf("watch: primary branch: %w", err)
	}
	obs := Observation{Mark: Mark{Head: b.SHA, Updated: prev.Updated, AtUpdated: prev.AtUpdated, Timer: prev.Timer, Run: now}}
	q := forge.IssueQuery{State: forge.StateAll}
	if ok && !prev.Updated.IsZero() {
		q.Since = prev.Updated
	}
	issues, err := w.Forge.ListIssues(ctx, q)
	if err != nil {
		return Observation{}, fmt.Errorf("watch: issues: %w", err)
	}
	updated := false
	for _, i := range issues {
		u := i.Updated.UTC().Truncate(time.Second)
		fp := fingerprint(i)
		if seen, was := prev.AtUpdated[i.Number]; u.After(prev.Updated) || (u.Equal(prev.Updated) && seen != fp) || (!was && u.Equal(prev.Updated)) {
			updated = true
		}
		switch {
		case u.After(obs.Updated):
			obs.Updated, obs.AtUpdated = u, map[int64]string{i.Number: fp}
		case u.Equal(obs.Updated):
			if obs.AtUpdated == nil {
				obs.AtUpdated = map[int64]string{}
			}
			obs.AtUpdated[i.Number] = fp
		}
	}
	switch {
	case !ok:
		obs.Why = "first run"
	case b.SHA != prev.Head:
		obs.Why = "primary branch moved"
	case updated:
		obs.Why = "issues updated"
	case !prev.Timer.IsZero() && !now.Before(prev.Timer):
		obs.Why = "timer due"
	}
	return obs, nil
}

// Save records obs as the last run's mark, with timer the earliest timer
// the run left (zero for none).
func (w Watch) Save(obs Observation, timer time.Time) error {
	m := obs.Mark
	m.Timer = timer
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(w.File), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(w.File, data, 0o600)
}

// Last returns the saved mark; ok is false when there is none.
func (w Watch) Last() (Mark, bool) {
	m, ok, _ := w.load()
	return m, ok
}

func (w Watch) load() (Mark, bool, error) {
	// A torn or foreign file costs one full run, not a stuck role.
	return atomicfile.ReadState[Mark](w.File)
}

// fingerprint sums what a run reads of an issue: title, body, state,
// labels and assignees.
func fingerprint(i forge.Issue) string {
	h := sha256.New()
	for _, s := range []string{i.Title, i.Body, string(i.State)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, l := range i.Labels {
		h.Write([]byte(l))
		h.Write([]byte{1})
	}
	for _, a := range i.Assignees {
		h.Write([]byte(a))
		h.Write([]byte{2})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
