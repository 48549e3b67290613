package gateway

import (
	"errors"
	"fmt"
	"time"
)

// ErrBudget is wrapped by every refusal for a spent budget.
var ErrBudget = errors.New("budget exhausted")

// Limits are the token budgets a run is held to; zero means no bound.
type Limits struct {
	// Run bounds the run's own tokens.
	Run int64
	// Day bounds the tokens of all the project's runs of one day, in the
	// grant's timezone.
	Day int64
}

// BudgetError says which budget a run met.
type BudgetError struct {
	Project string
	// Budget is "run" or "day".
	Budget      string
	Limit, Used int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the %s budget of %s (%d tokens) is spent: %d used", e.Budget, e.Project, e.Limit, e.Used)
}

// Unwrap returns ErrBudget.
func (e *BudgetError) Unwrap() error { return ErrBudget }

// total is what u counts against a budget: every token the backend
// processed, cached or not.
func (u Usage) total() int64 { return u.InputTokens + u.OutputTokens + u.CacheRead + u.CacheCreation }

// tally is a project's tokens of one day.
type tally struct {
	day    string
	tokens int64
}

// dayOf is the day t falls on in loc (UTC when nil).
func dayOf(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.DateOnly)
}

// Spent counts tokens the project used at t (in loc) against its day
// budget: what the ledger recorded before this process started.
func (g *Gateway) Spent(project string, at time.Time, loc *time.Location, tokens int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.addLocked(project, dayOf(at, loc), tokens)
}

// addLocked adds tokens to the project's tally of day; a tally of an
// earlier day starts over. g.mu is held.
func (g *Gateway) addLocked(project, day string, tokens int64) {
	t := g.days[project]
	if t == nil || t.day < day {
		t = &tally{day: day}
		g.days[project] = t
	}
	if t.day == day {
		t.tokens += tokens
	}
}

// dayUsedLocked is what the project used today in loc. g.mu is held.
func (g *Gateway) dayUsedLocked(project string, loc *time.Location) int64 {
	if t := g.days[project]; t != nil && t.day == dayOf(g.now(), loc) {
		return t.tokens
	}
	return 0
}

// DayUsed is what the project used today (in loc), as metered.
func (g *Gateway) DayUsed(project string, loc *time.Location) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dayUsedLocked(project, loc)
}

// checkDayLocked refuses a grant whose project spent its day. g.mu is
// held.
func (g *Gateway) checkDayLocked(gr Grant) error {
	if gr.Limits.Day <= 0 {
		return nil
	}
	if used := g.dayUsedLocked(gr.Project, gr.TZ); used >= gr.Limits.Day {
		return &BudgetError{Project: gr.Project, Budget: "day", Limit: gr.Limits.Day, Used: used}
	}
	return nil
}

// admit decides whether l may send one more model request: never once
// its run or its project's day is spent. The request in flight may take
// a budget past its bound by what it uses; no later one is sent.
func (g *Gateway) admit(l *Lease) error {
	l.mu.Lock()
	used, refused := l.usage.total(), l.refused
	l.mu.Unlock()
	if refused != nil {
		return refused
	}
	var err error
	if lim := l.Grant.Limits.Run; lim > 0 && used >= lim {
		err = &BudgetError{Project: l.Grant.Project, Budget: "run", Limit: lim, Used: used}
	} else {
		g.mu.Lock()
		err = g.checkDayLocked(l.Grant)
		g.mu.Unlock()
	}
	if err != nil {
		l.mu.Lock()
		l.refused = err
		l.mu.Unlock()
	}
	return err
}

// Refused is the budget that stopped the run, or nil.
func (l *Lease) Refused() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}
