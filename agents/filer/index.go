package filer

import (
	"context"
	"fmt"

	"github.com/disinto/disinto/lib/forge"
)

// subKey names a sub-issue: its sprint's slug and its id in the block.
type subKey struct{ sprint, id string }

// index is what one pass knows of the project's issues, read once
// (W-FI-3): every issue, and the filer's sub-issues by key and by vision.
type index struct {
	issues   map[int64]forge.Issue
	filed    map[subKey]forge.Issue
	byVision map[int64][]int64
}

// lazyIndex reads the index on first use, once per pass.
type lazyIndex struct {
	load func(context.Context) (*index, error)
	idx  *index
}

// get returns the pass's index, reading it the first time.
func (l *lazyIndex) get(ctx context.Context) (*index, error) {
	if l.idx != nil {
		return l.idx, nil
	}
	idx, err := l.load(ctx)
	if err != nil {
		return nil, err
	}
	l.idx = idx
	return idx, nil
}

// index reads every issue of the project, open and closed, and indexes
// the decomposed-from markers of those the filer bot wrote. A marker in
// someone else's issue proves nothing and is ignored.
func (a *Agent) index(ctx context.Context) (*index, error) {
	all, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		return nil, fmt.Errorf("list issues: %w", err)
	}
	idx := &index{issues: make(map[int64]forge.Issue, len(all)), filed: map[subKey]forge.Issue{}, byVision: map[int64][]int64{}}
	for _, is := range all {
		idx.issues[is.Number] = is
		if a.mine(is.Author) {
			idx.add(is)
		}
	}
	return idx, nil
}

// add records is, one of the filer's issues, under each of its markers.
func (idx *index) add(is forge.Issue) {
	idx.issues[is.Number] = is
	for _, m := range forge.FindDecomposedFrom(is.Body) {
		k := subKey{m.Sprint, m.ID}
		if prev, dup := idx.filed[k]; dup && prev.Number <= is.Number {
			continue // the first one filed stands
		}
		idx.filed[k] = is
		idx.byVision[m.Vision] = append(idx.byVision[m.Vision], is.Number)
	}
}

// mine reports whether login is the filer bot.
func (a *Agent) mine(login string) bool {
	return forge.WrittenBy(login, a.o.Bot)
}
