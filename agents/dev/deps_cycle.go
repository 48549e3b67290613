package dev

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
)

// blockCycle blocks issue n, which nobody has claimed, for the dependency
// cycle path through it: a blocked comment naming the cycle, the blocked
// label instead of backlog, and a ledger record on the tick's run. An issue
// blocked before for the same cycle is blocked again only when it is back
// in the backlog unblocked (a human retried without breaking the cycle).
func (a *Agent) blockCycle(ctx context.Context, snap *snapshot, n int64, path []int64) error {
	g := snap.deps
	rec := g.recs[n]
	if rec.CycleBlocked && slices.Equal(rec.Cycle, path) {
		// The listing may predate the labels of the block.
		cur, err := a.o.Forge.GetIssue(ctx, n)
		if err != nil {
			return err
		}
		if cur.State != forge.StateOpen || cur.HasLabel(forge.LabelBlocked) || !cur.HasLabel(forge.LabelBacklog) {
			return nil
		}
		rec.CycleBlocked, rec.CycleComment = false, 0
	}
	cycle := deps.FormatPath(path)
	if rec.CycleComment == 0 || !slices.Equal(rec.Cycle, path) {
		body := fmt.Sprintf("### Blocked — issue #%d\n\n| | |\n|---|---|\n| Exit reason | `%s` |\n| Timestamp | %s |\n\n"+
			"This issue is on a dependency cycle: %s. None of these issues can start before another is done, so the dev agent takes none of them.\n\n"+
			"To retry, edit the dependencies of one of them to break the cycle, then remove `blocked` and add `backlog`.\n%s",
			n, codeDepsCycle, a.stamp(), cycle, outcomeMarker(codeDepsCycle))
		c, err := a.o.Forge.CreateComment(ctx, n, body)
		if err != nil {
			return err
		}
		rec.Cycle, rec.CycleComment, rec.CycleBlocked = path, c.ID, false
		g.put(n, rec)
		// Saved at once: a crash before the labels must not post it twice.
		if err := a.saveDepRecords(g); err != nil {
			return err
		}
	}
	if err := a.o.Forge.AddLabels(ctx, n, forge.LabelBlocked); err != nil {
		return err
	}
	if err := a.o.Forge.RemoveLabels(ctx, n, forge.LabelBacklog); err != nil {
		return err
	}
	if snap.run == nil {
		return errors.New("ledger: no run to record the outcome on")
	}
	now := a.o.Now()
	if err := snap.run.Record(ledger.Record{
		Run: fmt.Sprintf("dev-%s-%d-%d", a.o.Project, n, now.Unix()), Start: now, End: now,
		Project: a.o.Project, Role: string(config.RoleDev), Issue: n,
		Reason: ledger.ReasonBlocked, Code: codeDepsCycle, Detail: "dependency cycle " + cycle,
	}); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	rec.CycleBlocked = true
	g.put(n, rec)
	snap.log.Warn().Int64(logx.KeyIssue, n).Str("cycle", cycle).Str("code", string(codeDepsCycle)).Msg("blocked: dependency cycle")
	return nil
}
