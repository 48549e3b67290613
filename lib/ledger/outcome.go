package ledger

import "fmt"

// Reason is the coarse outcome of an agent run. Every run ends in exactly
// one reason; the dotted Code refines it.
type Reason string

// Reasons. Failures carry a Code that names what failed; a failure is never
// recorded without one.
const (
	// ReasonMerged: the run's pull request was merged.
	ReasonMerged Reason = "merged"
	// ReasonReviewed: a review was posted.
	ReasonReviewed Reason = "reviewed"
	// ReasonGroomed: the gardener (or planner) finished a grooming pass.
	ReasonGroomed Reason = "groomed"
	// ReasonPlanned: the planner, predictor or architect produced its output.
	ReasonPlanned Reason = "planned"
	// ReasonRefused: the model refused the work with evidence (too large,
	// already done, unmet dependency).
	ReasonRefused Reason = "refused"
	// ReasonBlocked: the issue was labelled blocked and needs a human.
	ReasonBlocked Reason = "blocked"
	// ReasonEscalated: the model or the orchestrator escalated to a human.
	ReasonEscalated Reason = "escalated"
	// ReasonCIPending: work stopped while waiting for CI; a later run resumes.
	ReasonCIPending Reason = "ci-pending"
	// ReasonReviewPending: work stopped while waiting for a review.
	ReasonReviewPending Reason = "review-pending"
	// ReasonInterrupted: shutdown cancelled the work; state is recoverable.
	ReasonInterrupted Reason = "interrupted"
	// ReasonEngineError: the daemon itself failed (panic, tick error).
	ReasonEngineError Reason = "engine-error"
	// ReasonIdle: the run found nothing to do.
	ReasonIdle Reason = "idle"
	// ReasonDone: the run finished its work and no finer reason applies.
	ReasonDone Reason = "done"
)

var reasons = map[Reason]bool{
	ReasonMerged: true, ReasonReviewed: true, ReasonGroomed: true, ReasonPlanned: true,
	ReasonRefused: true, ReasonBlocked: true, ReasonEscalated: true, ReasonCIPending: true,
	ReasonReviewPending: true, ReasonInterrupted: true, ReasonEngineError: true,
	ReasonIdle: true, ReasonDone: true,
}

// Validate reports whether r is a known reason.
func (r Reason) Validate() error {
	if !reasons[r] {
		return fmt.Errorf("unknown outcome reason %q", string(r))
	}
	return nil
}

// Failure reports whether the reason means the run did not achieve its goal
// and a Code is required.
func (r Reason) Failure() bool {
	switch r {
	case ReasonRefused, ReasonBlocked, ReasonEscalated, ReasonInterrupted, ReasonEngineError:
		return true
	}
	return false
}

// Code is a dotted outcome code such as "ci.red". Codes are open-ended
// (agents may add their own) but must be dotted lowercase words.
type Code string

// Known codes.
const (
	CodeCIRed             Code = "ci.red"
	CodeCIExhausted       Code = "ci.exhausted"
	CodeCITimeout         Code = "ci.timeout"
	CodeReviewExhausted   Code = "review.exhausted"
	CodeReviewChanges     Code = "review.changes_requested"
	CodeBuilderNoCommit   Code = "builder.no_commit"
	CodeBuilderNoProgress Code = "builder.no_progress"
	CodeBuilderNoEvidence Code = "builder.no_evidence"
	CodeMergeHeadMismatch Code = "merge.head_mismatch"
	CodeMergeConflict     Code = "merge.conflict"
	CodeClaudeTimeout     Code = "claude.timeout"
	CodeClaudeCrashed     Code = "claude.crashed"
	CodeClaudeAuth        Code = "claude.auth"
	// CodeBudgetExhausted: a token budget of the run, the issue or the
	// project's day is spent; the work waits.
	CodeBudgetExhausted    Code = "budget.exhausted"
	CodeForgeUnavailable   Code = "forge.unavailable"
	CodeForgeUnauthorized  Code = "forge.unauthorized"
	CodeRefusedTooLarge    Code = "refused.too_large"
	CodeRefusedAlreadyDone Code = "refused.already_done"
	CodeRefusedUnmetDep    Code = "refused.unmet_dependency"
	CodeEnginePanic        Code = "engine.panic"
	CodeEngineTick         Code = "engine.tick_failed"
	CodeEngineShutdown     Code = "engine.shutdown"
	CodeEscalatedByModel   Code = "escalated.by_model"
	// CodeSessionRefused: what a session left (its checkout) was refused
	// unread, because it would have led the daemon beyond it.
	CodeSessionRefused Code = "session.refused"
)

// Validate reports whether c is a well-formed dotted code.
func (c Code) Validate() error {
	s := string(c)
	if s == "" {
		return fmt.Errorf("empty outcome code")
	}
	dot := false
	prev := byte('.')
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '.':
			if prev == '.' {
				return fmt.Errorf("malformed outcome code %q", s)
			}
			dot = true
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '_', b == '-':
		default:
			return fmt.Errorf("malformed outcome code %q", s)
		}
		prev = b
	}
	if !dot || prev == '.' || s == "unclassified" {
		return fmt.Errorf("malformed outcome code %q", s)
	}
	return nil
}

// Coder is implemented by errors that know their outcome code. The runtime
// uses it to classify a failed tick instead of a generic code.
type Coder interface {
	OutcomeCode() Code
}
