package planner

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// Outcome codes of what the orchestrator refused of a plan.
const (
	// CodeOverBudget: the proposal did not fit the run's issue budget.
	CodeOverBudget ledger.Code = "plan.over_budget"
	// CodeDuplicate: an open issue (or an earlier proposal) has the title.
	CodeDuplicate ledger.Code = "plan.duplicate"
	// CodeNotOpen: a triage named an issue that is no open
	// prediction/unreviewed one, or decided it twice.
	CodeNotOpen ledger.Code = "plan.not_a_prediction"
	// CodeRefused: a part of the plan broke the schema.
	CodeRefused ledger.Code = "plan.refused"
	// CodeExcessClosed: issues the planner's identity opened during the
	// run beyond the budget were closed with a comment.
	CodeExcessClosed ledger.Code = "plan.excess_closed"
)

// MinBudget is the issue budget of a run that triaged nothing.
const MinBudget = 4

// Budget is the issue budget of a run that triaged n predictions:
// max(4, n+1). The reference allowed n+1 when n > 0, else 4, so that
// triaging one prediction cut the budget from 4 to 2; this one never
// falls when more is triaged (spec 40 §2.9.5).
func Budget(triaged int) int { return max(MinBudget, triaged+1) }

// Tracker is what the decisions are checked against: the open issues and,
// among them, the open predictions awaiting triage.
type Tracker struct {
	Open        []forge.Issue
	Predictions []forge.Issue
}

// Decisions is what the orchestrator decided of a plan.
type Decisions struct {
	// Budget is the run's issue budget.
	Budget int
	// File are the proposals to file, in order: the follow-ups of
	// actions first, then the rest as proposed.
	File []Proposal
	// Triage are the decisions to apply.
	Triage []Triage
	// Refused are the proposals and decisions not applied, with why.
	Refused []Refusal
	// Existing maps refs the plan duplicated onto the open issue that
	// has the title (a follow-up or priority then names that issue).
	Existing map[string]int64
}

// Refusal is one part of the plan not applied.
type Refusal struct {
	What   string
	Code   ledger.Code
	Reason string
}

// String renders the refusal for the run summary.
func (r Refusal) String() string { return fmt.Sprintf("%s: %s: %s", r.Code, r.What, r.Reason) }

// Decide applies the rules the reference left to the prompt: a triage
// names an open prediction, once; an action's follow-up exists in the
// plan (or is an open issue); a proposal duplicating an open issue's
// title is not filed; the proposals are filed, follow-ups first, while
// the budget, max(4, triaged+1), lasts.
func Decide(p Plan, t Tracker) Decisions {
	d := Decisions{Existing: map[string]int64{}}
	byRef := map[string]Proposal{}
	for _, pr := range p.Issues {
		byRef[pr.Ref] = pr
	}
	open := map[int64]bool{}
	for _, i := range t.Open {
		open[i.Number] = true
	}
	preds := map[int64]bool{}
	for _, i := range t.Predictions {
		preds[i.Number] = true
	}
	decided := map[int64]bool{}
	for _, tr := range p.Triage {
		what := fmt.Sprintf("triage of #%d", tr.Prediction)
		switch {
		case !preds[tr.Prediction] || decided[tr.Prediction]:
			d.Refused = append(d.Refused, Refusal{what, CodeNotOpen, "not an open prediction/unreviewed issue, or decided twice"})
			continue
		case tr.Decision == Action && tr.FollowUp != "" && byRef[tr.FollowUp].Ref == "":
			d.Refused = append(d.Refused, Refusal{what, CodeRefused, fmt.Sprintf("follow-up %q is no valid issue of the plan", tr.FollowUp)})
			continue
		case tr.Decision == Action && tr.Existing > 0 && !open[tr.Existing]:
			d.Refused = append(d.Refused, Refusal{what, CodeRefused, fmt.Sprintf("#%d is not an open issue", tr.Existing)})
			continue
		}
		decided[tr.Prediction] = true
		d.Triage = append(d.Triage, tr)
	}
	d.Budget = Budget(len(d.Triage))
	var ordered []Proposal
	first := map[string]bool{}
	for _, tr := range d.Triage {
		if tr.FollowUp != "" && !first[tr.FollowUp] {
			first[tr.FollowUp] = true
			ordered = append(ordered, byRef[tr.FollowUp])
		}
	}
	for _, pr := range p.Issues {
		if !first[pr.Ref] {
			ordered = append(ordered, pr)
		}
	}
	titles := map[string]int64{}
	for _, i := range t.Open {
		if n := normalise(i.Title); n != "" {
			titles[n] = i.Number
		}
	}
	for _, pr := range ordered {
		what := fmt.Sprintf("issue %q", pr.Title)
		n := normalise(pr.Title)
		if num, ok := titles[n]; ok {
			reason := "an earlier proposal of this run has the title"
			if num > 0 {
				reason = fmt.Sprintf("open issue #%d has the title", num)
				d.Existing[pr.Ref] = num
			}
			d.Refused = append(d.Refused, Refusal{what, CodeDuplicate, reason})
			continue
		}
		if len(d.File) >= d.Budget {
			d.Refused = append(d.Refused, Refusal{what, CodeOverBudget,
				fmt.Sprintf("over the budget of %d issues (max(%d, %d predictions triaged + 1))", d.Budget, MinBudget, len(d.Triage))})
			continue
		}
		titles[n] = 0
		d.File = append(d.File, Gate(pr))
	}
	return d
}

// Gate is the template-or-vision gate (spec 40 §2.4): a backlog proposal
// touching more than three files or needing more than five acceptance
// criteria is filed as vision, with the reason.
func Gate(p Proposal) Proposal {
	if p.Kind != Backlog {
		return p
	}
	var why []string
	if len(p.AffectedFiles) > maxAffected {
		why = append(why, fmt.Sprintf("it touches %d files; a backlog issue touches at most %d", len(p.AffectedFiles), maxAffected))
	}
	if len(p.Acceptance) > maxAcceptance {
		why = append(why, fmt.Sprintf("it needs %d acceptance criteria; a backlog issue has at most %d", len(p.Acceptance), maxAcceptance))
	}
	if len(why) == 0 {
		return p
	}
	p.Kind = Vision
	p.WhyVision = strings.Join(append([]string{strings.TrimSpace(p.WhyVision)}, why...), "; ")
	p.WhyVision = strings.TrimPrefix(p.WhyVision, "; ")
	return p
}

// normalise lowercases s and keeps its letters and digits, one space
// between words.
func normalise(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}
