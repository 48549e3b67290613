package filer

import (
	"context"
	"fmt"
	"slices"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// closeVisions closes every open vision issue that has sub-issues of the
// filer and all of them closed (W-FI-5: matched by the exact vision
// number of the marker, so #1 never collects #12's).
func (a *Agent) closeVisions(ctx context.Context, run *agent.Run, idx *index, log zerolog.Logger) error {
	var visions []int64
	for n, is := range idx.issues {
		if is.State == forge.StateOpen && is.HasLabel(forge.LabelVision) {
			visions = append(visions, n)
		}
	}
	slices.Sort(visions)
	for _, v := range visions {
		subs, complete := idx.subIssues(v)
		if !complete {
			continue
		}
		if err := a.complete(ctx, idx.issues[v], subs); err != nil {
			return err
		}
		log.Info().Int64("vision", v).Int("sub_issues", len(subs)).Msg("vision issue completed")
		if err := run.Record(ledger.Record{Reason: ledger.ReasonDone, Code: CodeVisionDone, Issue: v,
			Detail: fmt.Sprintf("vision #%d closed: %d sub-issues closed", v, len(subs))}); err != nil {
			return err
		}
	}
	return nil
}

// subIssues returns the filer's sub-issues of vision v in number order and
// whether there is at least one and all are closed.
func (idx *index) subIssues(v int64) ([]forge.Issue, bool) {
	ns := slices.Clone(idx.byVision[v])
	slices.Sort(ns)
	ns = slices.Compact(ns)
	subs := make([]forge.Issue, 0, len(ns))
	for _, n := range ns {
		is := idx.issues[n]
		if is.State != forge.StateClosed {
			return nil, false
		}
		subs = append(subs, is)
	}
	return subs, len(subs) > 0
}

// complete comments on vision issue v once, removes in-progress and
// closes it. Each step is idempotent, so a pass killed between them is
// finished by the next; a vision a human reopens with all its sub-issues
// closed is closed again, and stays open only with new open sub-issues.
func (a *Agent) complete(ctx context.Context, v forge.Issue, subs []forge.Issue) error {
	said, err := a.completionSaid(ctx, v.Number)
	if err != nil {
		return err
	}
	if !said {
		body, err := completedComment(v.Number, a.o.Bot, subs, a.o.Now())
		if err != nil {
			return err
		}
		if _, err := a.o.Forge.CreateComment(ctx, v.Number, body); err != nil {
			return fmt.Errorf("comment on vision #%d: %w", v.Number, err)
		}
	}
	if v.HasLabel(forge.LabelInProgress) {
		if err := a.o.Forge.RemoveLabels(ctx, v.Number, forge.LabelInProgress); err != nil {
			return fmt.Errorf("unlabel vision #%d: %w", v.Number, err)
		}
	}
	if err := a.o.Forge.CloseIssue(ctx, v.Number); err != nil {
		return fmt.Errorf("close vision #%d: %w", v.Number, err)
	}
	return nil
}

// completionSaid reports whether the filer's completion comment is on
// vision issue n already.
func (a *Agent) completionSaid(ctx context.Context, n int64) (bool, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return false, fmt.Errorf("comments of vision #%d: %w", n, err)
	}
	for _, c := range cs {
		if a.mine(c.Author) {
			if _, ok := c.MarkerBy(forge.MarkerVisionComplete, a.o.Bot); ok {
				return true, nil
			}
		}
	}
	return false, nil
}
