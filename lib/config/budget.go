package config

import "time"

// Budget bounds the model tokens a project's sessions may spend
// ([budget]); zero means no bound. A run or an issue at its bound, or a
// project at its day's, waits rather than fails: the day's bound lifts
// when the day rolls over (in the project's timezone), any bound when it
// is raised.
type Budget struct {
	// RunTokens bounds one session run.
	RunTokens int64
	// IssueTokens bounds all the runs of one issue.
	IssueTokens int64
	// DayTokens bounds the project's runs of one day.
	DayTokens int64
	// Zone is where the project's days begin (its timezone).
	Zone *time.Location
}

// rawBudget mirrors [budget].
type rawBudget struct {
	RunTokens   *int64 `toml:"run_tokens"`
	IssueTokens *int64 `toml:"issue_tokens"`
	DayTokens   *int64 `toml:"day_tokens"`
}

// validate reads r; bad reports each problem by key.
func (r rawBudget) validate(bad func(key, format string, args ...any)) Budget {
	var b Budget
	for _, f := range []struct {
		key string
		src *int64
		dst *int64
	}{{"budget.run_tokens", r.RunTokens, &b.RunTokens}, {"budget.issue_tokens", r.IssueTokens, &b.IssueTokens},
		{"budget.day_tokens", r.DayTokens, &b.DayTokens}} {
		if f.src == nil {
			continue
		}
		if *f.src <= 0 {
			bad(f.key, "must be a positive number of tokens (leave it out for no bound)")
			continue
		}
		*f.dst = *f.src
	}
	return b
}
