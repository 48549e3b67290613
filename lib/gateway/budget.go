package gateway

import (
	"errors"
	"fmt"
	"time"
)

// ErrBudget is wrapped by every refusal for a spent budget.
var ErrBudget = errors.New("budget exhausted")

// Bound is a budget in tokens, in US dollars, or both; a zero part is no
// bound. Money counts only what the price table prices.
type Bound struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// Limits are the budgets a run is held to.
type Limits struct {
	// Run bounds the run's own usage.
	Run Bound `json:"run"`
	// Day bounds all the project's runs of one day, in the grant's
	// timezone.
	Day Bound `json:"day"`
	// RoleDay bounds the runs of the grant's role on the project of one
	// day.
	RoleDay Bound `json:"role_day"`
}

// Units of a BudgetError.
const (
	UnitTokens = "tokens"
	UnitUSD    = "USD"
)

// BudgetError says which budget a run met.
type BudgetError struct {
	Project string `json:"project"`
	// Role is set for a role's own budget.
	Role string `json:"role,omitempty"`
	// Budget is "run" or "day".
	Budget string `json:"budget"`
	// Unit is UnitTokens or UnitUSD.
	Unit  string  `json:"unit"`
	Limit float64 `json:"limit"`
	Used  float64 `json:"used"`
}

func (e *BudgetError) Error() string {
	whose := e.Project
	if e.Role != "" {
		whose = e.Role + " on " + e.Project
	}
	if e.Unit == UnitUSD {
		return fmt.Sprintf("the %s budget of %s ($%.2f) is spent: $%.2f used", e.Budget, whose, e.Limit, e.Used)
	}
	return fmt.Sprintf("the %s budget of %s (%d tokens) is spent: %d used", e.Budget, whose, int64(e.Limit), int64(e.Used))
}

// Unwrap returns ErrBudget.
func (e *BudgetError) Unwrap() error { return ErrBudget }

// total is what u counts against a budget in tokens: every token the
// backend processed, cached or not.
func (u Usage) total() int64 { return u.InputTokens + u.OutputTokens + u.CacheRead + u.CacheCreation }

// check is the error of the first part of b that u reached, or nil.
func (b Bound) check(u Usage, budget, project, role string) error {
	switch {
	case b.Tokens > 0 && u.total() >= b.Tokens:
		return &BudgetError{Project: project, Role: role, Budget: budget, Unit: UnitTokens, Limit: float64(b.Tokens), Used: float64(u.total())}
	case b.USD > 0 && u.CostUSD >= b.USD:
		return &BudgetError{Project: project, Role: role, Budget: budget, Unit: UnitUSD, Limit: b.USD, Used: u.CostUSD}
	}
	return nil
}

// tally is what a project, or one role on it, used on one day.
type tally struct {
	Day   string `json:"day"`
	Usage Usage  `json:"usage"`
}

// dayOf is the day t falls on in loc (UTC when nil).
func dayOf(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.DateOnly)
}

// tallyKeys are the tallies a run of role on project counts in: the
// project's and the role's on it.
func tallyKeys(project, role string) [2]string {
	return [2]string{project, project + "\x00" + role}
}

// Spent counts what role's runs on project used at t (in loc) against
// the day budgets: what the ledger recorded before this process started.
func (g *Gateway) Spent(project, role string, at time.Time, loc *time.Location, u Usage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.addLocked(project, role, dayOf(at, loc), u)
}

// addLocked adds u to the tallies of day; a tally of an earlier day
// starts over. g.mu is held.
func (g *Gateway) addLocked(project, role, day string, u Usage) {
	for _, k := range tallyKeys(project, role) {
		t := g.days[k]
		if t == nil || t.Day < day {
			t = &tally{Day: day}
			g.days[k] = t
		}
		if t.Day == day {
			t.Usage.add(u)
		}
	}
}

// usedLocked is what key's tally holds of today in loc. g.mu is held.
func (g *Gateway) usedLocked(key string, loc *time.Location) Usage {
	if t := g.days[key]; t != nil && t.Day == dayOf(g.now(), loc) {
		return t.Usage
	}
	return Usage{}
}

// DayUsed is what the project used today (in loc), as metered; with a
// role, what that role's runs on it used.
func (g *Gateway) DayUsed(project, role string, loc *time.Location) Usage {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := tallyKeys(project, role)
	if role == "" {
		return g.usedLocked(k[0], loc)
	}
	return g.usedLocked(k[1], loc)
}

// checkDayLocked refuses a grant whose project, or whose role on it,
// spent its day. g.mu is held.
func (g *Gateway) checkDayLocked(gr Grant) error {
	k := tallyKeys(gr.Project, gr.Role)
	if err := gr.Limits.Day.check(g.usedLocked(k[0], gr.TZ), "day", gr.Project, ""); err != nil {
		return err
	}
	return gr.Limits.RoleDay.check(g.usedLocked(k[1], gr.TZ), "day", gr.Project, gr.Role)
}

// admit decides whether l may send one more model request: never once
// its run, its project's day or its role's day is spent. The request in
// flight may take a budget past its bound by what it uses; no later one
// is sent.
func (g *Gateway) admit(l *Lease) error {
	l.mu.Lock()
	used, refused := l.usage, l.refused
	l.mu.Unlock()
	if refused != nil {
		return refused
	}
	err := l.Grant.Limits.Run.check(used, "run", l.Grant.Project, "")
	if err == nil {
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
