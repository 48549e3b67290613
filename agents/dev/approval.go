package dev

import (
	"context"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/text"
)

// The merge gate. A pull request that is green and approved by the
// review bot is merged at once at level auto, unless it changes a
// protected path; otherwise it waits (StageAwaitingApproval) for a
// maintainer's approval of its head, or, at level advisory, for a
// maintainer to merge or close it. Each wait says so in one comment on
// the pull request, edited as what it waits for changes.

// mergeAllowed merges st's approved head when nobody else need approve
// it; else it moves st to StageAwaitingApproval, whose step runs in the
// same tick.
func (a *Agent) mergeAllowed(ctx context.Context, snap *snapshot, st *State) error {
	files, err := a.protectedOfPull(ctx, st)
	if err != nil {
		return err
	}
	if lvl := a.level(*st); lvl.Merges() && !lvl.NeedsMaintainer() && len(files) == 0 {
		return a.merge(ctx, snap, st)
	}
	return a.move(st, StageAwaitingApproval)
}

// protectedOfPull returns the protected paths st's pull request changes
// at its head, reading its diff once per head.
func (a *Agent) protectedOfPull(ctx context.Context, st *State) ([]string, error) {
	if st.ProtectedSHA == st.HeadSHA && st.HeadSHA != "" {
		return st.ProtectedFiles, nil
	}
	diff, err := a.o.Forge.PullDiff(ctx, st.PR)
	if err != nil {
		return nil, err
	}
	st.ProtectedSHA, st.ProtectedFiles = st.HeadSHA, a.protectedFiles(patch.Files(diff))
	return st.ProtectedFiles, a.st.save(*st)
}

// checkApproval is the step of StageAwaitingApproval: the head is green
// and approved by the review; it is merged once a maintainer approved it
// too (never at level advisory, where a maintainer merges it). A
// maintainer who labels the issue blocked ends the run.
func (a *Agent) checkApproval(ctx context.Context, snap *snapshot, st *State) error {
	if moved, err := a.followPull(ctx, snap, st); err != nil || moved {
		return err
	}
	if snap.open[st.Issue].HasLabel(forge.LabelBlocked) {
		return a.block(ctx, st, codeApprovalRefused, fmt.Sprintf("The issue was labelled blocked while pull request #%d waited for a maintainer; it was not merged.", st.PR), "")
	}
	files, err := a.protectedOfPull(ctx, st)
	if err != nil {
		return err
	}
	lvl := a.level(*st)
	if lvl.Merges() && !lvl.NeedsMaintainer() && len(files) == 0 {
		return a.merge(ctx, snap, st) // nothing to wait for any more
	}
	log := a.issueLog(*st)
	if !lvl.Merges() {
		st.Human = fmt.Sprintf("a maintainer to merge or close pull request #%d (level advisory)", st.PR)
		body := fmt.Sprintf("### Ready for a maintainer to merge\n\n%sThis project's autonomy level is `advisory`: the dev agent opens pull requests "+
			"and never merges them. CI is green on %s and the review approved it; merge it, or close it.\n", a.mentions(), st.HeadSHA)
		if err := a.putNote(ctx, st, &st.ApprovalNote, st.PR, "merge", body); err != nil {
			return err
		}
		return a.st.save(*st)
	}
	who, err := a.approvalOf(ctx, st, st.HeadSHA)
	if err != nil {
		return err
	}
	if who == "" {
		var why []string
		if lvl.NeedsMaintainer() {
			why = append(why, fmt.Sprintf("this project's autonomy level is `%s`", lvl))
		}
		if len(files) > 0 {
			why = append(why, "it changes protected paths: "+quotedPaths(a, files))
		}
		st.Human = fmt.Sprintf("a maintainer's approval of %s of pull request #%d", text.ShortSHA(st.HeadSHA), st.PR)
		body := fmt.Sprintf("### Waiting for a maintainer's approval\n\n%sCI is green on %s and the review approved it, but %s, "+
			"so it is merged only once a maintainer approves this head: a formal approval of the pull request at it, "+
			"or a comment with the line\n\n    %s %s\n\nA push makes a new head, which needs an approval of its own.\n",
			a.mentions(), st.HeadSHA, strings.Join(why, ", and "), approveCommand, st.HeadSHA)
		if err := a.putNote(ctx, st, &st.ApprovalNote, st.PR, "merge", body); err != nil {
			return err
		}
		return a.st.save(*st)
	}
	log.Info().Str("head", text.ShortSHA(st.HeadSHA)).Str("approver", who).Msg("a maintainer approved the head; merging")
	done := fmt.Sprintf("### Approved: %s\n\n@%s approved this head; the dev agent merges it.\n", st.HeadSHA, who)
	if err := a.putNote(ctx, st, &st.ApprovalNote, st.PR, "merge", done); err != nil {
		log.Warn().Str("error", a.red.Error(err)).Msg("could not update the approval note")
	}
	st.Human = ""
	return a.merge(ctx, snap, st)
}

// quotedPaths lists files as inline code, at most a few.
func quotedPaths(a *Agent, files []string) string {
	const most = 8
	var b strings.Builder
	for i, f := range files {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(files)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + strings.ReplaceAll(a.quote(f), "`", "'") + "`")
	}
	return b.String()
}
