package dev

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// fullListEvery is how often the whole list of open issues is read again;
// between, a tick asks only for the issues updated since the newest
// update it has seen. The full read catches what leaves no update behind
// (an issue deleted, an update the forge dated before the mark).
const fullListEvery = time.Hour

// issueList is the agent's copy of the project's open issues. Only Tick
// uses it, and ticks never overlap.
type issueList struct {
	open map[int64]forge.Issue
	// mark is the newest update seen, by the forge's clock; fullAt is when
	// the whole list was last read, by the agent's.
	mark, fullAt time.Time
}

// openIssues returns the project's open issues, newest first, at the cost
// of one request when few changed: a closed issue is returned by the
// incremental query too (closing updates it) and dropped.
func (a *Agent) openIssues(ctx context.Context) ([]forge.Issue, error) {
	l := &a.issues
	now := a.o.Now()
	if l.open == nil || l.mark.IsZero() || now.Sub(l.fullAt) >= fullListEvery {
		is, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateOpen})
		if err != nil {
			return nil, fmt.Errorf("list open issues: %w", err)
		}
		l.open, l.fullAt, l.mark = map[int64]forge.Issue{}, now, time.Time{}
		l.merge(is)
	} else {
		// The filter is inclusive, so an issue updated in the second of the
		// mark after it was read is listed too.
		is, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll, Since: l.mark})
		if err != nil {
			return nil, fmt.Errorf("list issues updated since %s: %w", l.mark.UTC().Format(time.RFC3339), err)
		}
		l.merge(is)
	}
	out := make([]forge.Issue, 0, len(l.open))
	for _, i := range l.open {
		out = append(out, i)
	}
	sort.Slice(out, func(x, y int) bool { return out[x].Number > out[y].Number })
	return out, nil
}

// merge takes is into the list: open issues are kept, others dropped.
func (l *issueList) merge(is []forge.Issue) {
	for _, i := range is {
		if i.State == forge.StateOpen {
			l.open[i.Number] = i
		} else {
			delete(l.open, i.Number)
		}
		if i.Updated.After(l.mark) {
			l.mark = i.Updated
		}
	}
}
