package config

import (
	"slices"
	"time"
)

// Bound is a budget in model tokens, in US dollars, or both; a zero part
// is no bound. Dollars count what the price table ([prices]) prices.
type Bound struct {
	Tokens int64
	USD    float64
}

// Budget bounds what a project's sessions may spend ([budget]). A run or
// an issue at its bound, or a project or role at its day's, waits rather
// than fails: the day's bound lifts when the day rolls over (in the
// project's timezone), any bound when it is raised.
type Budget struct {
	// Run bounds one session run.
	Run Bound
	// Issue bounds all the runs of one issue.
	Issue Bound
	// Day bounds the project's runs of one day.
	Day Bound
	// Roles are each role's own bounds ([budget.roles.<role>]), held
	// besides the project's.
	Roles map[Role]RoleBudget
	// Zone is where the project's days begin (its timezone).
	Zone *time.Location
}

// RoleBudget bounds one role's sessions on a project.
type RoleBudget struct {
	// Run bounds each of the role's runs; the tighter of it and the
	// project's holds.
	Run Bound
	// Day bounds the role's runs of one day.
	Day Bound
}

// RunBound is what bounds one run of role: the tighter part of the
// project's and the role's run bounds.
func (b Budget) RunBound(role Role) Bound {
	return tighter(b.Run, b.Roles[role].Run)
}

// tighter is the smaller non-zero of each part of a and b.
func tighter(a, b Bound) Bound {
	if b.Tokens > 0 && (a.Tokens == 0 || b.Tokens < a.Tokens) {
		a.Tokens = b.Tokens
	}
	if b.USD > 0 && (a.USD == 0 || b.USD < a.USD) {
		a.USD = b.USD
	}
	return a
}

// rawBound mirrors the keys of one bound: <prefix>_tokens and
// <prefix>_usd.
type rawBound struct {
	Tokens *int64
	USD    *float64
}

// rawBudget mirrors [budget].
type rawBudget struct {
	RunTokens   *int64                   `toml:"run_tokens"`
	RunUSD      *float64                 `toml:"run_usd"`
	IssueTokens *int64                   `toml:"issue_tokens"`
	IssueUSD    *float64                 `toml:"issue_usd"`
	DayTokens   *int64                   `toml:"day_tokens"`
	DayUSD      *float64                 `toml:"day_usd"`
	Roles       map[string]rawRoleBudget `toml:"roles"`
}

// rawRoleBudget mirrors [budget.roles.<role>].
type rawRoleBudget struct {
	RunTokens *int64   `toml:"run_tokens"`
	RunUSD    *float64 `toml:"run_usd"`
	DayTokens *int64   `toml:"day_tokens"`
	DayUSD    *float64 `toml:"day_usd"`
}

// validate reads r; bad reports each problem by key.
func (r rawBudget) validate(bad func(key, format string, args ...any)) Budget {
	b := Budget{
		Run:   rawBound{r.RunTokens, r.RunUSD}.validate("budget.run", bad),
		Issue: rawBound{r.IssueTokens, r.IssueUSD}.validate("budget.issue", bad),
		Day:   rawBound{r.DayTokens, r.DayUSD}.validate("budget.day", bad),
	}
	for name, rr := range r.Roles {
		key := "budget.roles." + name
		role := Role(name)
		if !slices.Contains(sessionRoles(), role) {
			bad(key, "unknown role %q (roles with model sessions: %s)", name, joinRoles(sessionRoles()))
			continue
		}
		if b.Roles == nil {
			b.Roles = map[Role]RoleBudget{}
		}
		b.Roles[role] = RoleBudget{
			Run: rawBound{rr.RunTokens, rr.RunUSD}.validate(key+".run", bad),
			Day: rawBound{rr.DayTokens, rr.DayUSD}.validate(key+".day", bad),
		}
	}
	return b
}

// validate reads the bound whose keys begin with prefix.
func (r rawBound) validate(prefix string, bad func(key, format string, args ...any)) Bound {
	var b Bound
	if r.Tokens != nil {
		if *r.Tokens <= 0 {
			bad(prefix+"_tokens", "must be a positive number of tokens (leave it out for no bound)")
		} else {
			b.Tokens = *r.Tokens
		}
	}
	if r.USD != nil {
		if !(*r.USD > 0) {
			bad(prefix+"_usd", "must be a positive amount of US dollars (leave it out for no bound)")
		} else {
			b.USD = *r.USD
		}
	}
	return b
}

// sessionRoles are the roles whose agents run model sessions.
func sessionRoles() []Role {
	return rolesWhere(func(s RoleSpec) bool { return s.Formula != "" })
}
