package dev

import (
	"context"
	"errors"
	"fmt"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/logx"
)

// Stage is the observable state of one issue's work.
type Stage string

// The stages of the per-issue state machine; machine() says what each one
// does and where it may lead.
const (
	// StageNone is the stage of an issue without a run of this agent.
	StageNone Stage = ""
	// StageImplementing: the first session of the run (or one interrupted
	// by a restart) must run.
	StageImplementing Stage = "implementing"
	// StageResuming: a maintainer sent the issue back from blocked or
	// escalated; the session is resumed with what they wrote since.
	StageResuming Stage = "resuming"
	// StageFixing: the session is resumed with News (CI log, review,
	// rebase request).
	StageFixing Stage = "fixing"
	// StageNudging: a session ended without committing anything; it is
	// resumed once and asked to commit.
	StageNudging Stage = "nudging"
	// StagePublishing: the session has finished; what it left (commits,
	// phase, refusal) is acted on: pushed, a pull request opened. A retry
	// never pays for the model again.
	StagePublishing Stage = "publishing"
	// StageHeld: the session's head (HeldSHA) changes protected paths;
	// it is kept off the forge's branches until a maintainer approves it
	// (hold.go).
	StageHeld Stage = "held"
	// StageAwaitingCI: the branch is pushed and the pull request open; the
	// agent waits for the combined status of HeadSHA.
	StageAwaitingCI Stage = "awaiting_ci"
	// StageAwaitingReview: CI is green on HeadSHA; the agent waits for a
	// verdict and merges on approval.
	StageAwaitingReview Stage = "awaiting_review"
	// StageAwaitingApproval: CI is green and the review approved HeadSHA,
	// but the autonomy level or a protected path wants a maintainer: the
	// merge waits for their approval of the head (at level advisory, for
	// them to merge it).
	StageAwaitingApproval Stage = "awaiting_approval"
	// StageDone, StageRefused, StageBlocked and StageEscalated end a run.
	StageDone      Stage = "done"
	StageRefused   Stage = "refused"
	StageBlocked   Stage = "blocked"
	StageEscalated Stage = "escalated"
)

// Terminal reports whether no step advances s any more.
func (s Stage) Terminal() bool {
	switch s {
	case StageDone, StageRefused, StageBlocked, StageEscalated:
		return true
	}
	return false
}

// driver says who runs a stage's step.
type driver int

const (
	// byNobody: the stage ends the run; its step only finishes the
	// bookkeeping (ledger record, state removal).
	byNobody driver = iota
	// byTick: every tick runs the step once, inline; it reads the forge
	// and either waits or moves on at once.
	byTick
	// inBackground: the step runs a model session or publishes one's
	// work; it runs as the runtime's tracked work of the issue, and the
	// background stages that follow run in the same work.
	inBackground
)

// stageDef is one row of the transition table.
type stageDef struct {
	// does says in a line what happens in the stage.
	does string
	// by says who runs step.
	by driver
	// step does the stage's work and moves st on with a.move, or leaves
	// it where it is to wait. snap is nil for background steps.
	step func(a *Agent, ctx context.Context, snap *snapshot, st *State) error
	// next lists the stages step (from StageNone: a claim or an
	// adoption) may move st to.
	next []Stage
}

// machine is the transition table of the dev agent: every stage, what it
// does, the one function that does it, and the stages it may lead to.
// Blocked is reachable from every live stage, because a step that keeps
// failing is bounded: its issue is blocked with the error.
func machine() map[Stage]stageDef {
	session := []Stage{StagePublishing, StageImplementing, StageBlocked}
	return map[Stage]stageDef{
		StageNone: {
			does: "claim a ready backlog issue (one sent back resumes its session), or adopt an own in-progress one",
			step: nil, // runs start in pick and adopt (poll.go)
			next: []Stage{StageImplementing, StageResuming, StageAwaitingCI},
		},
		StageImplementing: {
			does: "run the first session from the dev formula (after a restart: resume it)",
			by:   inBackground, step: (*Agent).runSession, next: session,
		},
		StageResuming: {
			does: "resume the session with the maintainers' answer",
			by:   inBackground, step: (*Agent).runSession, next: session,
		},
		StageFixing: {
			does: "resume the session with the CI failure, the review or a rebase request",
			by:   inBackground, step: (*Agent).runSession, next: session,
		},
		StageNudging: {
			does: "resume the session once to commit what it did",
			by:   inBackground, step: (*Agent).runSession, next: session,
		},
		StagePublishing: {
			does: "act on the session's result: refusal, phase, push, pull request; a fix turn that committed nothing is asked once more",
			by:   inBackground, step: (*Agent).publish,
			next: []Stage{StageAwaitingCI, StageHeld, StageNudging, StageFixing, StageRefused, StageEscalated, StageBlocked},
		},
		StageHeld: {
			does: "keep a head that changes protected paths off the branches until a maintainer approves it, then push it",
			by:   byTick, step: (*Agent).checkHold,
			next: []Stage{StageAwaitingCI, StageDone, StageBlocked},
		},
		StageAwaitingCI: {
			does: "wait for CI on the head; re-run it after an infrastructure failure",
			by:   byTick, step: (*Agent).checkCI,
			next: []Stage{StageAwaitingReview, StageAwaitingCI, StageFixing, StageDone, StageEscalated, StageBlocked},
		},
		StageAwaitingReview: {
			does: "wait for a verdict on the head; merge on approval",
			by:   byTick, step: (*Agent).checkReview,
			next: []Stage{StageDone, StageAwaitingApproval, StageAwaitingCI, StageFixing, StageEscalated, StageBlocked},
		},
		StageAwaitingApproval: {
			does: "wait for a maintainer's approval of the approved head (level approve, protected paths); at advisory, for them to merge it",
			by:   byTick, step: (*Agent).checkApproval,
			next: []Stage{StageDone, StageAwaitingCI, StageFixing, StageBlocked},
		},
		StageDone: {does: "merged, or the issue closed by someone else", step: (*Agent).settle},
		StageRefused: {
			does: "the model refused the issue (too large, already done, unmet dependency)",
			step: (*Agent).settle,
		},
		StageBlocked: {
			does: "a human must look; relabelled backlog, it is claimed again",
			step: (*Agent).settle,
		},
		StageEscalated: {
			does: "the maintainers must decide; relabelled backlog, it is claimed again",
			step: (*Agent).settle,
		},
	}
}

// errTransition marks a move the transition table does not allow.
var errTransition = errors.New("transition not in the table")

// allows reports whether the table lets from lead to to. A stage no
// release knows may only be blocked.
func allows(m map[Stage]stageDef, from, to Stage) bool {
	def, ok := m[from]
	if !ok {
		return to == StageBlocked
	}
	for _, n := range def.next {
		if n == to {
			return true
		}
	}
	return false
}

// move is the one place a stage changes: it checks the move against the
// table, marks the milestones it reaches, starts the clock of a wait, and
// saves st. An ended run moves on
// only as a new one, whose state starts over from StageNone.
func (a *Agent) move(st *State, to Stage) error {
	if !allows(a.m, st.Stage, to) {
		return fmt.Errorf("issue #%d: %w: %q to %q", st.Issue, errTransition, st.Stage, to)
	}
	if st.Stage != to {
		a.issueLog(*st).Debug().Str("to", string(to)).Msg("stage")
	}
	now := a.o.Now()
	st.Timeline.mark(st.Stage, to, now)
	st.From, st.Stage = st.Stage, to
	if a.m[to].by == byTick {
		st.WaitingSince = now
	}
	return a.st.save(*st)
}

// advance runs the steps of one issue that has no background work
// running: byTick steps inline, one after the other while each moves on
// (CI green goes to review in the same tick); the first background stage
// is handed to the runtime.
func (a *Agent) advance(ctx context.Context, snap *snapshot, st *State) error {
	for {
		def, ok := a.m[st.Stage]
		if !ok || st.Stage == StageNone {
			return fmt.Errorf("unknown stage %q", st.Stage)
		}
		if def.by == byNobody {
			return def.step(a, ctx, snap, st)
		}
		if _, open := snap.open[st.Issue]; !open {
			return a.closedUnderUs(ctx, st)
		}
		if def.by == inBackground {
			a.startBackground(ctx, *st)
			return nil
		}
		from := st.Stage
		if err := def.step(a, ctx, snap, st); err != nil || st.Stage == from {
			return err
		}
	}
}

// startBackground runs st's background stages as the issue's tracked
// work, one after the other, until one waits for the forge or ends the
// run. A failing step is retried next tick, a bounded number of times.
func (a *Agent) startBackground(ctx context.Context, st State) {
	a.spawn(ctx, st, func(ctx context.Context) {
		for {
			def := a.m[st.Stage]
			if def.by != inBackground {
				return
			}
			from := st.Stage
			agent.Step(ctx, string(st.Stage)) // the work's heartbeat
			if err := def.step(a, ctx, nil, &st); err != nil {
				a.backgroundFailed(ctx, &st, err)
				return
			}
			if st.Stage == from {
				return
			}
		}
	})
}

// backgroundFailed counts a failed background step: publishing and
// starting a session have their own bounds, after which the issue is
// blocked.
func (a *Agent) backgroundFailed(ctx context.Context, st *State, err error) {
	log := a.issueLog(*st)
	if ctx.Err() != nil {
		log.Info().Msg("session interrupted by shutdown; it resumes after the restart")
		return
	}
	if errors.Is(err, claude.ErrBudgetExhausted) {
		a.budgetSpent(ctx, st, err)
		return
	}
	if claude.Transient(err) || errors.Is(err, claude.ErrAuth) {
		// The model backend's fault, not the issue's: no strike, the
		// session runs again at the next tick.
		log.Warn().Str(logx.KeyOutcome, claude.Code(err)).Str("error", a.red.Error(err)).
			Msg("model backend unavailable; the session runs again next tick")
		return
	}
	if code, ok := agent.Unavailable(err); ok {
		// Nor is a forge that is down or a connection that broke: no
		// strike toward blocking the issue.
		log.Warn().Str(logx.KeyOutcome, string(code)).Str("error", a.red.Error(err)).
			Msg("forge unavailable; the session step runs again next tick")
		return
	}
	code, why, count := codeSessionStart, "Starting the model session kept failing.", &st.StartFailures
	if st.Stage == StagePublishing {
		code, why, count = codeAfterSession, "Publishing the session's work kept failing.", &st.AfterFailures
	}
	*count++
	if *count > maxAfterFailures {
		if berr := a.block(ctx, st, code, why, a.red.Error(err)); berr != nil {
			log.Error().Str("error", a.red.Error(berr)).Msg("block failed")
		}
		return
	}
	if serr := a.st.save(*st); serr != nil {
		log.Error().Str("error", a.red.Error(serr)).Msg("save state")
	}
	log.Error().Str("error", a.red.Error(err)).Msg("session step failed; retried next tick")
}

// budgetSpent lets the issue wait on a spent budget: no strike, one
// comment saying which budget and how the work resumes, and the session
// runs again at a later tick (a day budget lifts when the day rolls over,
// any budget when it is raised).
func (a *Agent) budgetSpent(ctx context.Context, st *State, err error) {
	log := a.issueLog(*st)
	log.Warn().Str(logx.KeyOutcome, claude.Code(err)).Str("error", a.red.Error(err)).Msg("budget spent; the issue waits")
	if st.BudgetNoted {
		return
	}
	body := agent.BudgetNote("Work on this issue", a.red.Error(err))
	if _, cerr := a.o.Forge.CreateComment(ctx, st.Issue, body); cerr != nil {
		log.Warn().Str("error", a.red.Error(cerr)).Msg("could not say on the issue that its budget is spent")
		return
	}
	st.BudgetNoted = true
	if serr := a.st.save(*st); serr != nil {
		log.Error().Str("error", a.red.Error(serr)).Msg("save state")
	}
}
