package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
)

// settle ends a run that applied its plan: it closes, with a comment,
// issues the planner's identity opened during the run beyond the budget
// (the orchestrator files within it; anything else acting as the planner
// bot does not get around it), and moves the watermark past the run's
// own updates so that they are no news for the next run. An update by
// anyone else during the run keeps the watermark from before the run:
// the next run looks again.
func (a *Agent) settle(ctx context.Context, before formulaagent.Observation, me string, res *result, log zerolog.Logger) error {
	watch := a.o.Driver.Watch()
	if err := watch.Save(before, time.Time{}); err != nil {
		return err
	}
	after, err := watch.Changed(ctx, a.now())
	if err != nil {
		return err
	}
	q := forge.IssueQuery{State: forge.StateAll}
	if !before.Updated.IsZero() {
		q.Since = before.Updated
	}
	since, err := a.o.Forge.ListIssues(ctx, q)
	if err != nil {
		return fmt.Errorf("planner: issues updated during the run: %w", err)
	}
	if err := a.closeExcess(ctx, since, me, res); err != nil {
		return err
	}
	if len(res.closed) > 0 {
		return nil // the closes are news of their own; the next run looks
	}
	if after.Head != before.Head || after.Why == "" {
		return nil
	}
	for _, i := range since {
		if res.applied.Touched[i.Number] || !newsSince(i, before) {
			continue
		}
		log.Debug().Int64("issue", i.Number).Msg("an issue changed during the run; the next run looks again")
		return nil
	}
	return watch.Save(after, time.Time{})
}

// newsSince reports whether i was updated after the watermark was
// taken.
func newsSince(i forge.Issue, m formulaagent.Observation) bool {
	u := i.Updated.UTC().Truncate(time.Second)
	if u.After(m.Updated) {
		return true
	}
	_, seen := m.AtUpdated[i.Number]
	return u.Equal(m.Updated) && !seen
}

// closeExcess closes the open issues of the planner's identity that
// appeared during the run (not open when the run listed the tracker, not
// filed by it), newest first, while the run's issues and theirs exceed
// the budget; each gets a comment saying why.
func (a *Agent) closeExcess(ctx context.Context, issues []forge.Issue, me string, res *result) error {
	mine := map[int64]bool{}
	for _, n := range res.applied.Numbers {
		mine[n] = true
	}
	var others []forge.Issue
	for _, i := range issues {
		if i.State == forge.StateOpen && strings.EqualFold(i.Author, me) && !mine[i.Number] && !res.openBefore[i.Number] {
			others = append(others, i)
		}
	}
	over := len(res.applied.Numbers) + len(others) - res.decisions.Budget
	if over <= 0 {
		return nil
	}
	sort.Slice(others, func(x, y int) bool { return others[x].Number > others[y].Number })
	for _, i := range others[:min(over, len(others))] {
		body := fmt.Sprintf("**Planner:** closed. The planner's identity opened this issue during a run whose issue budget is %d "+
			"(max(%d, predictions triaged + 1)), and the run had filed its budget; the planner files its issues itself, within it. "+
			"Reopen it if it is wanted.\n", res.decisions.Budget, MinBudget)
		if _, err := a.o.Forge.CreateComment(ctx, i.Number, body); err != nil {
			return fmt.Errorf("close #%d beyond the budget: %w", i.Number, err)
		}
		if err := a.o.Forge.CloseIssue(ctx, i.Number); err != nil {
			return fmt.Errorf("close #%d beyond the budget: %w", i.Number, err)
		}
		res.applied.Touched[i.Number] = true
		res.closed = append(res.closed, i.Number)
	}
	return nil
}
