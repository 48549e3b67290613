package dev

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/patch"
	verdictpkg "github.com/disinto/disinto/lib/verdict"
)

// advance moves one issue that has no running session at most one step.
func (a *Agent) advance(ctx context.Context, snap *snapshot, st *State) error {
	if st.Stage.Terminal() {
		return a.settle(ctx, st)
	}
	if _, open := snap.open[st.Issue]; !open {
		return a.closedUnderUs(ctx, st)
	}
	switch st.Stage {
	case StageImplementing, StageFixing:
		// A restart interrupted the session: resume it.
		a.startSession(ctx, *st)
		return nil
	case StageAwaitingCI, StageAwaitingReview:
	default:
		return fmt.Errorf("unknown stage %q", st.Stage)
	}
	pr, ok := snap.own[st.Branch]
	if !ok || (st.PR != 0 && pr.Number != st.PR) {
		got, err := a.o.Forge.GetPull(ctx, st.PR)
		if err != nil {
			return err
		}
		pr = got
	}
	if !ours(pr, snap.me, st.Branch) {
		// Only a state written before ownership was checked can point here.
		return a.block(ctx, st, codeForeignPull, fmt.Sprintf("pull request #%d was opened by %s from %s, not by the dev agent from %s; it is never merged",
			pr.Number, pr.Author, pr.HeadRepo, st.Branch), "")
	}
	switch {
	case pr.Merged:
		return a.merged(ctx, st, pr.MergedSHA)
	case pr.State != forge.StateOpen:
		return a.block(ctx, st, ledger.Code("pr.closed_externally"), fmt.Sprintf("pull request #%d was closed without merging", pr.Number), "")
	}
	if pr.HeadSHA != st.HeadSHA {
		// Someone pushed: whatever was known about the old head is moot.
		st.HeadSHA = pr.HeadSHA
		a.await(st, StageAwaitingCI)
		if err := a.st.save(*st); err != nil {
			return err
		}
	}
	if st.Stage == StageAwaitingCI {
		done, err := a.checkCI(ctx, st)
		if err != nil || !done {
			return err
		}
	}
	return a.checkReview(ctx, st)
}

// infraRe recognises CI failures of the infrastructure rather than the code.
var infraRe = regexp.MustCompile(`(?i)failed to connect|connection (timed out|refused|reset)|tls handshake timeout|` +
	`docker pull.*timeout|no space left on device|exit code 137|oom|killed|infrastructure|runner (lost|offline)`)

// checkCI reads the combined status of the head; done reports that CI is
// green and the review may be checked.
func (a *Agent) checkCI(ctx context.Context, st *State) (bool, error) {
	log := a.issueLog(*st)
	if a.o.CISystem == config.CINone {
		a.await(st, StageAwaitingReview)
		return true, a.st.save(*st)
	}
	cs, err := a.o.Forge.CombinedStatus(ctx, st.HeadSHA)
	if err != nil {
		return false, err
	}
	switch cs.State {
	case "":
		// No CI reported at all: a change without code needs none (the
		// reference's rule, which CI path filters rely on).
		nonCode, err := a.nonCode(ctx, st)
		if err != nil {
			return false, err
		}
		if nonCode {
			log.Info().Msg("no CI status on a pull request that changes no code; going to review")
			a.await(st, StageAwaitingReview)
			return true, a.st.save(*st)
		}
		return false, a.overdue(ctx, st, a.lim.CITimeout, ledger.CodeCITimeout, "CI")
	case forge.CIPending:
		return false, a.overdue(ctx, st, a.lim.CITimeout, ledger.CodeCITimeout, "CI")
	case forge.CISuccess:
		log.Info().Msg("CI green")
		a.await(st, StageAwaitingReview)
		return true, a.st.save(*st)
	}
	report := ciReport(cs)
	if infraRe.MatchString(report) && st.InfraRetries < a.lim.InfraRetries {
		st.InfraRetries++
		log.Warn().Msg("CI failed on infrastructure; re-running it once")
		msg := fmt.Sprintf("ci: retrigger after infra failure (#%d)", st.Issue)
		head, err := a.o.Git.EmptyCommit(ctx, st.Branch, msg)
		if err != nil {
			return false, err
		}
		st.HeadSHA = head
		a.await(st, StageAwaitingCI)
		return false, a.st.save(*st)
	}
	st.CIFixes++
	if st.CIFixes > a.lim.CIFixes {
		return false, a.block(ctx, st, ledger.CodeCIExhausted,
			fmt.Sprintf("CI failed %d times on pull request #%d", st.CIFixes, st.PR), report)
	}
	log.Info().Int("attempt", st.CIFixes).Msg("CI red; resuming the session with the failure")
	st.News = ciNews(st, a.lim.CIFixes, report)
	st.Stage = StageFixing
	if err := a.st.save(*st); err != nil {
		return false, err
	}
	a.startSession(ctx, *st)
	return false, nil
}

// nonCode reports whether the pull request's head changes no code. The
// diff is read once per head.
func (a *Agent) nonCode(ctx context.Context, st *State) (bool, error) {
	if st.CodeCheckedSHA != st.HeadSHA {
		diff, err := a.o.Forge.PullDiff(ctx, st.PR)
		if err != nil {
			return false, err
		}
		st.CodeCheckedSHA, st.NonCodeSHA = st.HeadSHA, ""
		if patch.NonCode(patch.Files(diff)) {
			st.NonCodeSHA = st.HeadSHA
		}
		if err := a.st.save(*st); err != nil {
			return false, err
		}
	}
	return st.NonCodeSHA == st.HeadSHA, nil
}

// ciReport describes every non-green status with its description and link.
func ciReport(cs forge.CombinedStatus) string {
	var b strings.Builder
	for _, s := range cs.Statuses {
		if s.State == forge.CISuccess {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s", s.Context, s.State)
		if s.Description != "" {
			fmt.Fprintf(&b, ": %s", s.Description)
		}
		if s.TargetURL != "" {
			fmt.Fprintf(&b, " (%s)", s.TargetURL)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func ciNews(st *State, limit int, report string) string {
	return fmt.Sprintf("CI failed on pull request #%d at %s (attempt %d/%d).\n\nWhat CI reported:\n%s\n\n"+
		"Find the cause, fix it without weakening any test, run the checks, commit, and rebase onto the primary "+
		"branch if it moved. Then write PHASE:awaiting_ci to the phase file.",
		st.PR, shortSHA(st.HeadSHA), st.CIFixes, limit, formula.Untrusted(report))
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// checkReview acts on the newest verdict for the head. With a review bot
// only its verdicts count; without one, only a formal review of the head
// by a collaborator with write access does. A marker or a review by
// anyone else is ignored.
func (a *Agent) checkReview(ctx context.Context, st *State) error {
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
		st.ReviewedSHA = st.HeadSHA
		if err := a.st.save(*st); err != nil {
			return err
		}
		return a.merge(ctx, st)
	}
	st.HandledReview = key
	st.ReviewRounds++
	if st.ReviewRounds > a.lim.ReviewRounds {
		return a.block(ctx, st, ledger.CodeReviewExhausted,
			fmt.Sprintf("review asked for changes %d times on pull request #%d", st.ReviewRounds, st.PR), "")
	}
	log.Info().Int("round", st.ReviewRounds).Msg("changes requested; resuming the session with the review")
	st.News = fmt.Sprintf("The review of pull request #%d at %s asks for changes (round %d/%d):\n\n%s\n\n"+
		"Address every point (or explain in the commit message why a point should not be followed), run the "+
		"checks, commit, and rebase onto the primary branch if it moved. "+
		"Then write PHASE:awaiting_ci to the phase file.",
		st.PR, shortSHA(st.HeadSHA), st.ReviewRounds, a.lim.ReviewRounds, formula.Untrusted(a.red.String(r.Feedback)))
	st.Stage = StageFixing
	if err := a.st.save(*st); err != nil {
		return err
	}
	a.startSession(ctx, *st)
	return nil
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
// fell behind the primary branch, or conflicts with it, goes back to the
// session for a rebase first.
func (a *Agent) merge(ctx context.Context, st *State) error {
	behind, err := a.o.Git.Behind(ctx, st.Branch)
	if err != nil {
		return err
	}
	if behind {
		return a.rebase(ctx, st, codeMergeBehind, fmt.Sprintf("it has fallen behind %s", a.o.PrimaryBranch), "")
	}
	err = a.o.Forge.Merge(ctx, st.PR, forge.MergeOptions{HeadSHA: st.ReviewedSHA, DeleteBranch: true,
		Message: fmt.Sprintf("fix: %s (#%d)", st.Title, st.Issue)})
	if errors.Is(err, forge.ErrMergeBlocked) {
		// A forge refuses a conflicting pull request as not mergeable.
		if pr, gerr := a.o.Forge.GetPull(ctx, st.PR); gerr == nil && pr.State == forge.StateOpen && !pr.Mergeable {
			err = fmt.Errorf("%w: %w", forge.ErrConflict, err)
		}
	}
	switch {
	case err == nil, errors.Is(err, forge.ErrAlreadyMerged):
		pr, gerr := a.o.Forge.GetPull(ctx, st.PR)
		if gerr != nil {
			return gerr
		}
		return a.merged(ctx, st, pr.MergedSHA)
	case errors.Is(err, forge.ErrHeadMoved):
		return a.block(ctx, st, ledger.CodeMergeHeadMismatch,
			fmt.Sprintf("the head of pull request #%d moved after the approval of %s; the unreviewed head was not merged",
				st.PR, shortSHA(st.ReviewedSHA)), "")
	case errors.Is(err, forge.ErrConflict):
		return a.rebase(ctx, st, ledger.CodeMergeConflict, "it conflicts with "+a.o.PrimaryBranch, a.red.Error(err))
	case errors.Is(err, forge.ErrMergeBlocked):
		st.MergeAttempts++
		if st.MergeAttempts >= a.lim.MergeAttempts {
			return a.block(ctx, st, ledger.Code("merge.blocked"), "the forge refused the merge", a.red.Error(err))
		}
		return a.st.save(*st)
	}
	return err
}

// codeMergeBehind ends a run whose branch kept falling behind the primary
// branch.
const codeMergeBehind ledger.Code = "merge.behind"

// rebase resumes the session to rebase the approved branch onto the
// primary branch, at most Limits.Rebases times per run; after that the
// issue is blocked with code.
func (a *Agent) rebase(ctx context.Context, st *State, code ledger.Code, why, detail string) error {
	st.Rebases++
	if st.Rebases > a.lim.Rebases {
		return a.block(ctx, st, code, fmt.Sprintf("pull request #%d is approved but %s, still after %d rebases",
			st.PR, why, a.lim.Rebases), detail)
	}
	a.issueLog(*st).Info().Int("rebase", st.Rebases).Str("why", why).Msg("approved but not mergeable; resuming the session to rebase")
	if detail != "" {
		detail = "\n\nThe forge said:\n\n" + formula.Untrusted(detail)
	}
	st.News = fmt.Sprintf("Pull request #%d is approved but cannot be merged: %s (rebase %d/%d).%s\n\n"+
		"Rebase the branch onto origin/%s (already fetched), resolve any conflicts keeping the intent of both sides "+
		"and run the checks. Then write PHASE:awaiting_ci to the phase file.",
		st.PR, why, st.Rebases, a.lim.Rebases, detail, a.o.PrimaryBranch)
	st.Stage = StageFixing
	if err := a.st.save(*st); err != nil {
		return err
	}
	a.startSession(ctx, *st)
	return nil
}

// await moves st into a waiting stage and starts the wait's clock.
func (a *Agent) await(st *State, stage Stage) {
	st.Stage, st.WaitingSince = stage, a.o.Now()
}

// overdue escalates st once it has waited limit or longer for what (CI or
// review) on its head. A wait without a start (a state written before
// waits were timed) starts now.
func (a *Agent) overdue(ctx context.Context, st *State, limit time.Duration, code ledger.Code, what string) error {
	if st.WaitingSince.IsZero() {
		st.WaitingSince = a.o.Now()
		return a.st.save(*st)
	}
	waited := a.o.Now().Sub(st.WaitingSince)
	if waited < limit {
		return nil
	}
	return a.escalate(ctx, st, code, fmt.Sprintf("No %s result for %s of pull request #%d after %s (limit %s).",
		what, shortSHA(st.HeadSHA), st.PR, waited.Round(time.Second), limit))
}
