package dev

import (
	"time"

	"github.com/disinto/disinto/lib/ledger"
)

// Timeline is when a run reached its milestones; a zero time is one not
// (yet) reached. A run that loops (CI red, changes requested) keeps the
// first pull request and the last green CI and approval, so the stages
// add up to the way the run took.
type Timeline struct {
	Claimed        time.Time `json:"claimed,omitzero"`
	SessionStarted time.Time `json:"session_started,omitzero"`
	PullOpened     time.Time `json:"pull_opened,omitzero"`
	CIGreen        time.Time `json:"ci_green,omitzero"`
	Approved       time.Time `json:"approved,omitzero"`
	Merged         time.Time `json:"merged,omitzero"`
}

// The stages of a run's ledger record, between consecutive milestones.
const (
	StageClaimToSession  = "claim_to_session"
	StageSessionToPR     = "session_to_pr"
	StagePRToCI          = "pr_to_ci"
	StageCIToApproval    = "ci_to_approval"
	StageApprovalToMerge = "approval_to_merge"
)

// stages returns the time between each two consecutive milestones the run
// reached.
func (t Timeline) stages() []ledger.StageTime {
	marks := []struct {
		name string
		at   time.Time
	}{
		{"", t.Claimed}, {StageClaimToSession, t.SessionStarted}, {StageSessionToPR, t.PullOpened},
		{StagePRToCI, t.CIGreen}, {StageCIToApproval, t.Approved}, {StageApprovalToMerge, t.Merged},
	}
	var out []ledger.StageTime
	for i := 1; i < len(marks); i++ {
		from, to := marks[i-1].at, marks[i].at
		if from.IsZero() || to.IsZero() || to.Before(from) {
			continue
		}
		out = append(out, ledger.StageTime{Name: marks[i].name, Wall: to.Sub(from)})
	}
	return out
}

// mark records the milestones a move from one stage to another reaches.
func (t *Timeline) mark(from, to Stage, now time.Time) {
	switch {
	case from == StageNone && (to == StageImplementing || to == StageResuming):
		t.Claimed = now
	case from == StagePublishing && to == StageAwaitingCI && t.PullOpened.IsZero():
		t.PullOpened = now
	case to == StageAwaitingReview:
		t.CIGreen = now
	}
}
