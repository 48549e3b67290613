package dev

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/text"
	verdictpkg "github.com/disinto/disinto/lib/verdict"
)

// checkReview is the step of StageAwaitingReview: it acts on the newest
// verdict for the head. With a review bot only its verdicts count; without
// one, only a formal review of the head by a collaborator with write
// access does. A marker or a review by anyone else is ignored. An
// approval is merged; a change request goes back to the session.
func (a *Agent) checkReview(ctx context.Context, snap *snapshot, st *State) error {
	if moved, err := a.followPull(ctx, snap, st); err != nil || moved {
		return err
	}
	reviews, err := a.o.Forge.ListReviews(ctx, st.PR)
	if err != nil {
		return err
	}
	var r verdictpkg.Reading
	var ok bool
	if a.o.ReviewBot != "" {
		comments, err := a.o.Forge.ListComments(ctx, st.PR)
		if err != nil {
			return err
		}
		r, ok = verdictpkg.Read(comments, reviews, st.HeadSHA, a.o.ReviewBot)
	} else {
		r, ok, err = verdictpkg.ReadFormal(reviews, st.HeadSHA, func(login string) (bool, error) { return a.mayApprove(ctx, login) })
		if errors.Is(err, forge.ErrForbidden) {
			return a.block(ctx, st, codeReviewUnverifiable, fmt.Sprintf("A review of pull request #%d cannot be verified: no review bot "+
				"is configured, and the dev agent may not read collaborators' permissions on %s (that takes admin there). "+
				"Configure a review bot, or give the dev bot admin on the repository.", st.PR, a.o.Repo), a.red.Error(err))
		}
		if err != nil {
			return err
		}
	}
	key := fmt.Sprintf("%s:%s:%s", r.SHA, r.Verdict, bodyHash(r.Feedback)[:12])
	if !ok || key == st.HandledReview {
		return a.overdue(ctx, st, a.lim.ReviewTimeout, ledger.Code("review.timeout"), "review")
	}
	log := a.issueLog(*st)
	if r.Verdict.Approved() {
		if st.ReviewedSHA != st.HeadSHA {
			// First seen now: a merge that waits keeps the approval's time.
			st.ReviewedSHA, st.Timeline.Approved = st.HeadSHA, a.o.Now()
		}
		if err := a.st.save(*st); err != nil {
			return err
		}
		return a.mergeAllowed(ctx, snap, st)
	}
	st.HandledReview = key
	st.ReviewRounds++
	if st.ReviewRounds > a.lim.ReviewRounds {
		return a.block(ctx, st, ledger.CodeReviewExhausted,
			fmt.Sprintf("review asked for changes %d times on pull request #%d", st.ReviewRounds, st.PR), "")
	}
	log.Info().Int("round", st.ReviewRounds).Msg("changes requested; resuming the session with the review")
	if st.News, err = a.reviewNews(st, a.red.String(r.Feedback)); err != nil {
		return err
	}
	return a.move(st, StageFixing)
}

// codeReviewUnverifiable ends a run whose reviews could not be checked.
const codeReviewUnverifiable ledger.Code = "review.unverifiable"

// mayApprove reports whether login's formal reviews count when there is no
// review bot: a collaborator with write access (or admin, or the owner),
// never the agent itself. An unknown login may not.
func (a *Agent) mayApprove(ctx context.Context, login string) (bool, error) {
	me, err := a.identity(ctx)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(login, me) {
		return false, nil
	}
	p, err := a.o.Forge.CollaboratorPermission(ctx, login)
	if errors.Is(err, forge.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.CanWrite(), nil
}

// merge merges the pull request pinned to the reviewed head. A branch that
// fell behind the primary branch, or conflicts with it, is rebased first
// (see rebase).
func (a *Agent) merge(ctx context.Context, snap *snapshot, st *State) error {
	behind, err := a.o.Git.Behind(ctx, st.Branch)
	if err != nil {
		return err
	}
	if behind {
		return a.rebase(ctx, snap, st, codeMergeBehind, fmt.Sprintf("it has fallen behind %s", a.o.PrimaryBranch), "")
	}
	err = a.o.Forge.Merge(ctx, st.PR, forge.MergeOptions{HeadSHA: st.ReviewedSHA, DeleteBranch: true,
		Message: fmt.Sprintf("fix: %s (#%d)", st.Title, st.Issue)})
	if errors.Is(err, forge.ErrMergeBlocked) || errors.Is(err, forge.ErrMergePending) {
		// A forge refuses a conflicting pull request as not mergeable
		// (Gitea says "try again later" for a conflict as for a check
		// still running; the pull request tells them apart).
		if pr, gerr := a.o.Forge.GetPull(ctx, st.PR); gerr == nil && pr.State == forge.StateOpen && !pr.Mergeable {
			err = fmt.Errorf("%w: %w", forge.ErrConflict, err)
		}
	}
	var landed *forge.LandedError
	switch {
	case errors.As(err, &landed):
		return a.landedUnrecorded(ctx, st, landed)
	case errors.Is(err, forge.ErrMergePending) && !errors.Is(err, forge.ErrConflict) &&
		a.o.Now().Sub(st.Timeline.Approved) < mergePendingLimit:
		// A busy forge that finished its check only after the retries
		// is no refusal: the merge is tried again next tick, and costs no
		// attempt.
		a.issueLog(*st).Info().Msg("the forge still checks whether the pull request can be merged; merging next tick")
		return nil
	case err == nil, errors.Is(err, forge.ErrAlreadyMerged):
		pr, gerr := a.o.Forge.GetPull(ctx, st.PR)
		if gerr != nil {
			return gerr
		}
		return a.merged(ctx, st, pr.MergedSHA)
	case errors.Is(err, forge.ErrHeadMoved):
		return a.block(ctx, st, ledger.CodeMergeHeadMismatch,
			fmt.Sprintf("the head of pull request #%d moved after the approval of %s; the unreviewed head was not merged",
				st.PR, text.ShortSHA(st.ReviewedSHA)), "")
	case errors.Is(err, forge.ErrConflict):
		return a.rebase(ctx, snap, st, ledger.CodeMergeConflict, "it conflicts with "+a.o.PrimaryBranch, a.red.Error(err))
	case errors.Is(err, forge.ErrMergeBlocked), errors.Is(err, forge.ErrMergePending):
		st.MergeAttempts++
		if st.MergeAttempts >= a.lim.MergeAttempts {
			return a.block(ctx, st, ledger.Code("merge.blocked"), "the forge refused the merge", a.red.Error(err))
		}
		return a.st.save(*st)
	}
	return err
}

// mergePendingLimit bounds how long after the approval a forge may keep
// saying that it still checks mergeability before that counts as a
// refused merge.
const mergePendingLimit = 15 * time.Minute

// codeMergeBehind ends a run whose branch kept falling behind the primary
// branch.
const codeMergeBehind ledger.Code = "merge.behind"

// rebase brings an approved branch that cannot be merged up to date with
// the primary branch, at most Limits.Rebases times per run (after that the
// issue is blocked with code). The agent rebases the branch itself first,
// without a session: a clean rebase is pushed and its new head, which
// nobody approved, goes back to CI and review. Only a conflict resumes the
// session to rebase.
func (a *Agent) rebase(ctx context.Context, snap *snapshot, st *State, code ledger.Code, why, detail string) error {
	st.Rebases++
	if st.Rebases > a.lim.Rebases {
		return a.block(ctx, st, code, fmt.Sprintf("pull request #%d is approved but %s, still after %d rebases",
			st.PR, why, a.lim.Rebases), detail)
	}
	log := a.issueLog(*st)
	head, err := a.o.Git.Rebase(ctx, st.Branch)
	switch {
	case errors.Is(err, git.ErrConflict):
		log.Info().Int("rebase", st.Rebases).Str("why", why).Msg("approved but not mergeable, and the rebase conflicts; resuming the session to rebase")
		return a.askRebase(st, why, strings.TrimSpace(detail+"\n"+a.red.Error(err)))
	case err != nil:
		// Not counted: the state is saved only once the rebase is done.
		return err
	case head == "" || head == st.HeadSHA:
		// Nothing to replay, yet the forge would not merge: only the
		// session can find out why.
		log.Info().Int("rebase", st.Rebases).Str("why", why).Msg("approved but not mergeable, and nothing to rebase; resuming the session")
		return a.askRebase(st, why, detail)
	}
	log.Info().Int("rebase", st.Rebases).Str("why", why).Str("head", text.ShortSHA(head)).
		Msg("approved but not mergeable; rebased without the model, the new head goes back to CI and review")
	old := st.HeadSHA
	st.HeadSHA, st.ReviewedSHA, st.RebasedFrom = head, "", old
	if snap != nil {
		// This tick's listing still shows the old head.
		if pr, ok := snap.own[st.Branch]; ok {
			pr.HeadSHA = head
			snap.own[st.Branch] = pr
		}
	}
	return a.move(st, StageAwaitingCI)
}

// askRebase resumes the session to rebase the approved branch; detail is
// what the forge or git said, if anything.
func (a *Agent) askRebase(st *State, why, detail string) error {
	news, err := a.rebaseNews(st, why, detail)
	if err != nil {
		return err
	}
	st.News = news
	return a.move(st, StageFixing)
}

// landedTitle heads the comment on a pull request whose merge reached the
// primary branch without the forge recording it.
const landedTitle = "### Merged outside the forge's record"

// landedUnrecorded ends a run whose approved head reached the primary
// branch through a merge the forge pushed but never recorded, and refused
// to record afterwards: the pull request is closed with a note naming the
// commit, and the issue is done as merged.
func (a *Agent) landedUnrecorded(ctx context.Context, st *State, l *forge.LandedError) error {
	a.issueLog(*st).Warn().Str(logx.KeySHA, text.ShortSHA(l.SHA)).Str("error", a.red.Error(l.Err)).
		Msg("the approved head is on the primary branch but the forge did not record the merge; closing the pull request")
	body := fmt.Sprintf("%s\n\nThe approved head %s is on `%s` as %s, but the forge did not record the merge and refused to record it afterwards. The pull request is closed; its change is merged.\n",
		landedTitle, text.ShortSHA(st.ReviewedSHA), a.o.PrimaryBranch, text.ShortSHA(l.SHA))
	if err := a.postOnce(ctx, st.PR, landedTitle, body); err != nil {
		return err
	}
	if err := a.o.Forge.ClosePull(ctx, st.PR); err != nil {
		return err
	}
	return a.merged(ctx, st, l.SHA)
}
