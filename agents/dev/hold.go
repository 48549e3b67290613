package dev

import (
	"context"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/text"
)

// The push hold. A forge's CI (Forgejo and Gitea Actions, Woodpecker
// through the forge's webhooks) runs on pushes to branches and on pull
// requests, with the workflow files of the pushed commit and the
// repository's secrets. A session's commit that changes protected paths
// (CI files above all) is therefore never pushed to a branch before a
// maintainer approved exactly that commit: publishing holds it
// (StageHeld), puts it under heldRef on the forge, where nothing runs,
// and says on the issue what it waits for, with the diff of the
// protected files. Once a maintainer approved it, checkHold pushes it
// and opens the pull request, and CI runs what the maintainer read.
//
// A later head of the same work (a fix after CI or a review) is pushed
// without a second approval when its protected files are as they were in
// the approved head; else it is held again. The agent's own rebase and
// its empty commit that re-runs CI replay only what the forge's branch
// already held, so they push at once; the merge still waits for a
// maintainer's approval of the head it merges (see mergeWait).

// codeApprovalRefused ends a run a maintainer stopped (labelled blocked)
// while it waited for their approval.
const codeApprovalRefused ledger.Code = "approval.refused"

// hold keeps head off the forge's branches when it must wait for a
// maintainer: it reports true after moving st to StageHeld, false when
// head may be pushed now.
func (a *Agent) hold(ctx context.Context, st *State, head string) (bool, error) {
	diff, err := a.o.Git.Changes(ctx, "", head)
	if err != nil {
		return false, err
	}
	files := a.protectedFiles(patch.Files(diff))
	if len(files) == 0 {
		return false, nil
	}
	if st.PushApproved != "" {
		since, err := a.o.Git.Changes(ctx, st.PushApproved, head)
		if err == nil && len(a.protectedFiles(patch.Files(since))) == 0 {
			return false, nil
		}
		if err != nil {
			// The approved commit is gone from the clone: ask again.
			a.issueLog(*st).Warn().Str("error", a.red.Error(err)).Msg("approved head unreadable; the new head waits for an approval of its own")
		}
	}
	log := a.issueLog(*st)
	held := "the forge, under `" + heldRef(st.Branch) + "`"
	if err := a.o.Git.Hold(ctx, head, st.Branch); err != nil {
		// Best effort: the note still shows the protected files.
		log.Warn().Str("error", a.red.Error(err)).Msg("held commits not put on the forge; they stay in the agent's clone")
		held = "the agent's clone only (the forge refused the hidden ref)"
	}
	st.HeldSHA = head
	st.Human = fmt.Sprintf("a maintainer's /approve of %s (protected: %s)", text.ShortSHA(head), quotedPaths(a, files))
	if err := a.putNote(ctx, st, &st.HoldNote, st.Issue, "push", a.holdNote(st, head, held, files, diff)); err != nil {
		return false, err
	}
	log.Info().Str("head", text.ShortSHA(head)).Strs("protected", files).Msg("changes protected paths; held for a maintainer's approval")
	return true, a.move(st, StageHeld)
}

// holdNote is the issue's note while head waits: what it changes of the
// protected paths, in full, and how to approve or refuse it.
func (a *Agent) holdNote(st *State, head, held string, files []string, diff string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Waiting for a maintainer: the change touches protected paths\n\n"+
		"%sThe dev agent's work on this issue changes paths this project protects. It is on no branch, so no CI has run it "+
		"and none will before a maintainer approves exactly this commit.\n\n| | |\n|---|---|\n| Commit | %s |\n| Kept on | %s |\n",
		a.mentions(), head, held)
	fmt.Fprintf(&b, "| Protected paths | %s |\n", quotedPaths(a, files))
	if others := len(patch.Files(diff)) - len(files); others > 0 {
		fmt.Fprintf(&b, "| Other files changed | %d |\n", others)
	}
	pd, cut := a.protectedDiff(diff)
	fmt.Fprintf(&b, "\n<details open><summary>Diff of the protected paths%s</summary>\n\n%s\n</details>\n\n", cut, formula.Fence("diff", a.quote(pd)))
	fmt.Fprintf(&b, "To read all of it: `git fetch origin %s && git diff origin/%s...FETCH_HEAD`.\n\n"+
		"To let it be pushed (and CI run it), a maintainer comments on this issue with the line\n\n    %s %s\n\n"+
		"To refuse it, close the issue, or label it `blocked` and say what to change: relabelled `backlog`, the work resumes with your comments.\n",
		heldRef(st.Branch), a.o.PrimaryBranch, approveCommand, head)
	return b.String()
}

// checkHold is the step of StageHeld: it waits for a maintainer's
// approval of the held head, then pushes it and opens (or updates) the
// pull request. A maintainer who labels the issue blocked ends the run.
func (a *Agent) checkHold(ctx context.Context, snap *snapshot, st *State) error {
	if st.PR > 0 {
		if moved, err := a.followPull(ctx, snap, st); err != nil || moved {
			return err
		}
	}
	if snap.open[st.Issue].HasLabel(forge.LabelBlocked) {
		return a.block(ctx, st, codeApprovalRefused, fmt.Sprintf("The issue was labelled blocked while commit %s waited for a maintainer's approval; "+
			"nothing of it was pushed to a branch.", text.ShortSHA(st.HeldSHA)), "")
	}
	who, err := a.approvalOf(ctx, st, st.HeldSHA)
	if err != nil || who == "" {
		return err
	}
	head := st.HeldSHA
	if err := a.o.Git.Push(ctx, head, st.Branch); err != nil {
		return err
	}
	if err := a.ensurePR(ctx, st, st.Summary); err != nil {
		return err
	}
	if pr, ok := snap.own[st.Branch]; ok && pr.Number == st.PR {
		// This tick's listing still shows the old head.
		pr.HeadSHA = head
		snap.own[st.Branch] = pr
	}
	log := a.issueLog(*st)
	done := fmt.Sprintf("### Approved: commit %s\n\n@%s approved it; it is pushed to `%s` (pull request #%d), and CI runs it.\n",
		head, who, st.Branch, st.PR)
	if err := a.putNote(ctx, st, &st.HoldNote, st.Issue, "push", done); err != nil {
		log.Warn().Str("error", a.red.Error(err)).Msg("could not update the hold note")
	}
	st.HeadSHA, st.PushApproved, st.HeldSHA, st.Human = head, head, "", ""
	st.AfterFailures, st.Summary, st.NoProgress = 0, "", 0
	log.Info().Str("head", text.ShortSHA(head)).Str("approver", who).Msg("held head approved; pushed")
	return a.move(st, StageAwaitingCI)
}
