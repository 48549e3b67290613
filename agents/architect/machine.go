package architect

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/disinto/disinto/lib/forge"
)

// Stage is where a sprint pull request stands (spec 50 §2.2, made
// explicit): pitched → awaiting decision → accepted → questions asked →
// answered → … → ready to merge → merged, or rejected → closed.
type Stage string

// Stages of a sprint pull request.
const (
	// StagePitched: opened, the footer telling humans how to decide not
	// posted yet.
	StagePitched Stage = "pitched"
	// StageAwaitingDecision: waiting for an allowed human's ACCEPT or
	// REJECT (or formal review).
	StageAwaitingDecision Stage = "awaiting decision"
	// StageAccepting: an acceptance to acknowledge.
	StageAccepting Stage = "accepting"
	// StageQuestions: accepted, the design questions not asked yet.
	StageQuestions Stage = "accepted (questions due)"
	// StageAnswers: humans answered since the last design comment.
	StageAnswers Stage = "accepted (answers to read)"
	// StageAwaitingAnswers: questions asked, waiting for the humans.
	StageAwaitingAnswers Stage = "accepted (awaiting answers)"
	// StageReady: the design is final; waiting for a human to merge.
	StageReady Stage = "ready to merge"
	// StageRejecting: a rejection to carry out (acknowledge, record on the
	// vision issue, close, delete the branch).
	StageRejecting Stage = "rejected"
	// StageClosed and StageMerged are terminal.
	StageClosed Stage = "closed"
	StageMerged Stage = "merged"
)

// view is what one run knows of a sprint pull request: the pull request,
// its comments and reviews as listed at the start of the run plus what
// the run posted, and the local record.
type view struct {
	pr       sprintPR
	comments []forge.Comment
	reviews  []forge.Review
	rec      *prRecord
	who      people
	me       string
	// pending is the decision the stage acts on (Accepting, Rejecting).
	pending *Decision
}

// step is one stage's work. It acts on the forge, updates the view, and
// leaves the pull request in one of next.
type step struct {
	run  func(p *pass, ctx context.Context, v *view) error
	next []Stage
}

// machine is the architect's state machine: each stage with work, the
// step doing it and the stages it may lead to. Stages without an entry
// wait for a human (or are terminal).
var machine = map[Stage]step{
	StagePitched:   {(*pass).postFooter, []Stage{StageAwaitingDecision, StageAccepting, StageRejecting}},
	StageAccepting: {(*pass).accept, []Stage{StageQuestions, StageAnswers, StageAwaitingAnswers, StageReady, StageRejecting, StageAccepting}},
	StageRejecting: {(*pass).reject, []Stage{StageClosed}},
	StageQuestions: {(*pass).design, []Stage{StageAwaitingAnswers, StageReady, StageAnswers, StageRejecting}},
	StageAnswers:   {(*pass).design, []Stage{StageAwaitingAnswers, StageReady, StageAnswers, StageRejecting}},
}

// maxSteps bounds the steps of one pull request in one run.
const maxSteps = 8

// advance runs v's pull request through the machine until it waits for
// a human or ends, and returns the stage it stops at.
func (p *pass) advance(ctx context.Context, v *view) (Stage, error) {
	stage := classify(v)
	for range maxSteps {
		st, ok := machine[stage]
		if !ok {
			return stage, nil
		}
		p.log.Debug().Int64("pr", v.pr.Number).Str("stage", string(stage)).Msg("sprint step")
		if err := st.run(p, ctx, v); err != nil {
			return stage, err
		}
		next := classify(v)
		if !slices.Contains(st.next, next) {
			return next, fmt.Errorf("sprint #%d: %s led to %s, which the machine does not allow", v.pr.Number, stage, next)
		}
		stage = next
	}
	return stage, fmt.Errorf("sprint #%d: still at %s after %d steps", v.pr.Number, stage, maxSteps)
}

// classify computes the stage of v from the forge's facts and the local
// record; it changes nothing but v.pending.
func classify(v *view) Stage {
	v.pending = nil
	switch {
	case v.pr.Merged:
		return StageMerged
	case v.pr.State == forge.StateClosed:
		return StageClosed
	case !v.footered():
		return StagePitched
	}
	acted := v.acted()
	accepted, rejected := false, ""
	all := decisions(v.comments, v.reviews, v.who)
	for _, d := range all {
		switch verdict, done := acted[d.ID]; {
		case done && verdict == Accept:
			accepted = true
		case done && verdict == Reject:
			rejected = d.ID
		}
	}
	for i := range all {
		d := all[i]
		if _, done := acted[d.ID]; done {
			continue
		}
		v.pending = &d
		if d.Verdict == Reject {
			return StageRejecting
		}
		return StageAccepting
	}
	if rejected != "" {
		for i := range all {
			if all[i].ID == rejected {
				v.pending = &all[i]
			}
		}
		return StageRejecting
	}
	switch {
	case !accepted:
		return StageAwaitingDecision
	case !v.asked():
		return StageQuestions
	case len(v.newAnswers()) > 0:
		return StageAnswers
	case v.ready():
		return StageReady
	}
	return StageAwaitingAnswers
}

// mine reports whether c is the architect's own comment.
func (v *view) mine(c forge.Comment) bool { return forge.WrittenBy(c.Author, v.me) }

// footered reports whether the footer was posted.
func (v *view) footered() bool {
	for _, c := range v.comments {
		if v.mine(c) && c.Body == Footer {
			return true
		}
	}
	return false
}

// acted returns the decisions acted on, by id: the local record's, and
// those named by the decision markers of the architect's comments (which
// survive a lost data dir).
func (v *view) acted() map[string]Verdict {
	out := map[string]Verdict{}
	for _, c := range v.comments {
		if !v.mine(c) {
			continue
		}
		for _, m := range forge.ParseMarkers(c.Body) {
			if m.Kind == forge.MarkerSprintDecision && m.Fields["id"] != "" {
				out[m.Fields["id"]] = Verdict(m.Fields["verdict"])
			}
		}
	}
	for _, id := range v.rec.Decisions {
		if _, ok := out[id]; !ok {
			out[id] = v.recordedVerdict(id)
		}
	}
	return out
}

// recordedVerdict is the verdict of a decision the local record lists.
func (v *view) recordedVerdict(id string) Verdict {
	for _, d := range decisions(v.comments, v.reviews, v.who) {
		if d.ID == id {
			return d.Verdict
		}
	}
	return ""
}

// replies returns the reply markers of the architect's design comments.
func (v *view) replies() []forge.Marker {
	var out []forge.Marker
	for _, c := range v.comments {
		if m, ok := c.MarkerBy(forge.MarkerSprintReply, v.me); ok {
			out = append(out, m)
		}
	}
	return out
}

// asked reports whether a design session ran since the acceptance.
func (v *view) asked() bool { return v.rec.Through > 0 || v.rec.Asked || len(v.replies()) > 0 }

// through is the newest human comment a design session answered.
func (v *view) through() int64 {
	t := v.rec.Through
	for _, m := range v.replies() {
		if n, err := strconv.ParseInt(m.Fields["through"], 10, 64); err == nil && n > t {
			t = n
		}
	}
	return t
}

// ready is the newest design session's word on whether the sprint is
// final.
func (v *view) ready() bool {
	rs := v.replies()
	if len(rs) > 0 {
		last := rs[len(rs)-1]
		if n, _ := strconv.ParseInt(last.Fields["through"], 10, 64); n >= v.rec.Through {
			return last.Fields["ready"] == "true"
		}
	}
	return v.rec.Ready
}

// newAnswers are the allowed humans' comments since the last design
// session, but for bare decisions (a lone ACCEPT says nothing new).
func (v *view) newAnswers() []forge.Comment {
	t := v.through()
	var out []forge.Comment
	for _, c := range v.comments {
		if c.ID <= t || !v.who.human(c.Author) {
			continue
		}
		if _, _, ok := parseDecision(c.Body); ok && restAfterFirstLine(c.Body) == "" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// humanComments are every allowed human's comments, oldest first.
func (v *view) humanComments() []forge.Comment {
	var out []forge.Comment
	for _, c := range v.comments {
		if v.who.human(c.Author) {
			out = append(out, c)
		}
	}
	return out
}
