package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/text"
)

// publish is the step of StagePublishing: it reads what the finished
// session left (result file, phase file, commits) and acts on it: a
// refusal, an escalation, a nudge, or a push and a pull request.
func (a *Agent) publish(ctx context.Context, _ *snapshot, st *State) error {
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return err
	}
	ref, refErr := phase.ReadResult(a.resultFile(ws))
	badResult := errors.Is(refErr, phase.ErrInvalid)
	if refErr != nil && !badResult && !errors.Is(refErr, fs.ErrNotExist) {
		return refErr
	}
	remote, err := a.o.Git.RemoteHead(ctx, st.Branch)
	if err != nil {
		return err
	}
	head, ahead, err := a.o.Git.Collect(ctx, ws, st.Branch)
	if refused, berr := a.refusedCheckout(ctx, st, err); refused {
		return berr
	}
	if err != nil {
		return err
	}
	// A refusal counts only when nothing was committed for the issue yet.
	if (refErr == nil || badResult) && remote == "" && st.PR == 0 && ahead == 0 {
		if badResult {
			return a.block(ctx, st, ledger.Code("builder.bad_result"),
				"The model wrote a result file this agent does not understand.", a.red.Error(refErr))
		}
		return a.refuse(ctx, st, ref)
	}
	rep, err := a.sessionPhase(ws, st)
	if err != nil {
		return err
	}
	switch rep.Phase {
	case phase.Escalate:
		return a.escalate(ctx, st, ledger.CodeEscalatedByModel, rep.Reason)
	case phase.Failed:
		return a.block(ctx, st, ledger.Code("builder.failed"), "The model gave up on this issue.",
			fmt.Sprintf("reason: %s\n%s", rep.Reason, text.ClipTail(st.Summary, 2000)))
	}
	// awaiting_ci, awaiting_review, done or nothing: whatever was
	// committed goes to CI; nothing committed earns one nudge.
	if ahead == 0 {
		if st.From != StageNudging && st.SessionID != "" {
			return a.move(st, StageNudging)
		}
		return a.block(ctx, st, ledger.CodeBuilderNoCommit, "The model session ended without committing anything.",
			fmt.Sprintf("phase: %q\n%s", rep.Phase, text.ClipTail(st.Summary, 2000)))
	}
	if st.From == StageFixing && st.PR > 0 && head == st.HeadSHA {
		return a.noProgress(ctx, st, rep)
	}
	if head != remote {
		if held, err := a.hold(ctx, st, head); err != nil || held {
			return err
		}
		if err := a.o.Git.Push(ctx, head, st.Branch); err != nil {
			return err
		}
	}
	if err := a.ensurePR(ctx, st, st.Summary); err != nil {
		return err
	}
	st.HeadSHA, st.AfterFailures, st.Summary, st.NoProgress = head, 0, "", 0
	a.issueLog(*st).Info().Str("head", text.ShortSHA(head)).Msg("pushed; waiting for CI")
	return a.move(st, StageAwaitingCI)
}

// sessionPhase reads what the session left in its phase file. A missing or
// empty file is no phase; malformed content is logged and read as no phase,
// since what was pushed, not the file, decides what comes next.
func (a *Agent) sessionPhase(ws *sandbox.Workspace, st *State) (phase.State, error) {
	ps, err := phase.Read(a.phaseFile(ws))
	switch {
	case err == nil:
		return ps, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, phase.ErrEmpty):
		return phase.State{}, nil
	case errors.Is(err, phase.ErrInvalid):
		a.issueLog(*st).Warn().Str("error", a.red.Error(err)).Msg("malformed phase file ignored")
		return phase.State{}, nil
	}
	return phase.State{}, err
}

// noProgress handles a fix turn (after a CI failure, a review or a
// rebase request) that left the pull request's head where it was: the
// news it was given is unanswered, and waiting for CI or a review of the
// same head would only wait out a timeout (or spend another attempt on
// the same failure). The session is asked once more, explicitly; a second
// empty turn blocks the issue at once.
func (a *Agent) noProgress(ctx context.Context, st *State, rep phase.State) error {
	if st.NoProgress == 0 && st.SessionID != "" {
		news, err := a.followup(followNoProgress, map[string]string{"pr": fmt.Sprint(st.PR), "head": text.ShortSHA(st.HeadSHA)})
		if err != nil {
			return err
		}
		st.NoProgress, st.News, st.AfterFailures = 1, news, 0
		a.issueLog(*st).Info().Str("head", text.ShortSHA(st.HeadSHA)).Msg("fix turn committed nothing; asking the session once more")
		return a.move(st, StageFixing)
	}
	return a.block(ctx, st, ledger.CodeBuilderNoProgress,
		fmt.Sprintf("The model session answered twice without a new commit; pull request #%d is still at %s.", st.PR, text.ShortSHA(st.HeadSHA)),
		fmt.Sprintf("phase: %q\n%s", rep.Phase, text.ClipTail(st.Summary, 2000)))
}

// refusedCheckout blocks st with session.refused when err is a session
// checkout refused unread (it would have led git beyond itself: another
// repository's objects or refs, a FIFO); nothing of it is published.
func (a *Agent) refusedCheckout(ctx context.Context, st *State, err error) (bool, error) {
	var ue *git.UnsafeCheckoutError
	if !errors.As(err, &ue) {
		return false, nil
	}
	a.issueLog(*st).Warn().Str("path", ue.Path).Str("why", ue.Why).Msg("session checkout refused: nothing of it is read or published")
	what := ue.Path
	if rel, rerr := filepath.Rel(st.Worktree, ue.Path); rerr == nil && st.Worktree != "" && !strings.HasPrefix(rel, "..") {
		what = rel
	}
	return true, a.block(ctx, st, ledger.CodeSessionRefused,
		"The session's checkout holds something that would lead git outside it, so nothing of it was read or published.",
		fmt.Sprintf("%s: %s", what, ue.Why))
}
