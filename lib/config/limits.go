package config

import (
	"fmt"
	"time"
)

// Reference limits of the dev agent's work on one issue.
const (
	DefaultCITimeout     = 30 * time.Minute
	DefaultReviewTimeout = 3 * time.Hour
	DefaultCIFixAttempts = 3
	DefaultReviewRounds  = 5
	DefaultRebaseRounds  = 3
	DefaultMergeAttempts = 3
	DefaultCILogBytes    = 16384
	DefaultInFlight      = 1
	DefaultCIRecheck     = 20 * time.Minute
)

// Limits is a project's [limits]: how long the dev agent waits and how
// often it retries before it blocks or escalates an issue.
type Limits struct {
	// CITimeout bounds the wait for a CI result on one head (then the
	// issue is escalated, ci.timeout).
	CITimeout time.Duration
	// ReviewTimeout bounds the wait for a verdict on a green head
	// (review.timeout).
	ReviewTimeout time.Duration
	// CIFixAttempts is the number of CI failures the session may fix
	// (then ci.exhausted).
	CIFixAttempts int
	// ReviewRounds is the number of change requests answered (then
	// review.exhausted).
	ReviewRounds int
	// RebaseRounds bounds the rebases asked of the session for one pull
	// request.
	RebaseRounds int
	// MergeAttempts bounds merges the forge refuses.
	MergeAttempts int
	// CILogBytes bounds the CI log excerpt handed to the session.
	CILogBytes int
	// InFlight is how many issues the dev agent works at once.
	InFlight int
	// CIRecheck is how long the review agent's scheduled ticks leave a
	// head alone whose CI state, not green, read the same twice in a row
	// (ci_recheck); a status webhook wakes the review at once anyway.
	CIRecheck time.Duration
}

// DefaultLimits are the reference limits.
func DefaultLimits() Limits {
	return Limits{
		CITimeout: DefaultCITimeout, ReviewTimeout: DefaultReviewTimeout,
		CIFixAttempts: DefaultCIFixAttempts, ReviewRounds: DefaultReviewRounds, RebaseRounds: DefaultRebaseRounds,
		MergeAttempts: DefaultMergeAttempts, CILogBytes: DefaultCILogBytes, InFlight: DefaultInFlight,
		CIRecheck: DefaultCIRecheck,
	}
}

// rawLimits mirrors [limits]; nil means "not set".
type rawLimits struct {
	CITimeout     *Duration `toml:"ci_timeout"`
	ReviewTimeout *Duration `toml:"review_timeout"`
	CIFixAttempts *int      `toml:"ci_fix_attempts"`
	ReviewRounds  *int      `toml:"review_rounds"`
	RebaseRounds  *int      `toml:"rebase_rounds"`
	MergeAttempts *int      `toml:"merge_attempts"`
	CILogBytes    *int      `toml:"ci_log_bytes"`
	InFlight      *int      `toml:"in_flight"`
	CIRecheck     *Duration `toml:"ci_recheck"`
}

// maxCILogBytes keeps a CI log excerpt well inside a model's context.
const maxCILogBytes = 1 << 20

// validate applies r over the defaults; bad reports each problem by key.
func (r rawLimits) validate(bad func(key, format string, args ...any)) Limits {
	l := DefaultLimits()
	for _, d := range []struct {
		key string
		src *Duration
		dst *time.Duration
	}{{"limits.ci_timeout", r.CITimeout, &l.CITimeout}, {"limits.review_timeout", r.ReviewTimeout, &l.ReviewTimeout},
		{"limits.ci_recheck", r.CIRecheck, &l.CIRecheck}} {
		if d.src == nil {
			continue
		}
		if d.src.D() <= 0 {
			bad(d.key, "must be a positive duration")
			continue
		}
		*d.dst = d.src.D()
	}
	for _, n := range []struct {
		key      string
		src      *int
		dst      *int
		min, max int
	}{
		{"limits.ci_fix_attempts", r.CIFixAttempts, &l.CIFixAttempts, 1, 100},
		{"limits.review_rounds", r.ReviewRounds, &l.ReviewRounds, 1, 100},
		{"limits.rebase_rounds", r.RebaseRounds, &l.RebaseRounds, 1, 100},
		{"limits.merge_attempts", r.MergeAttempts, &l.MergeAttempts, 1, 100},
		{"limits.ci_log_bytes", r.CILogBytes, &l.CILogBytes, 256, maxCILogBytes},
		{"limits.in_flight", r.InFlight, &l.InFlight, 1, 64},
	} {
		if n.src == nil {
			continue
		}
		if *n.src < n.min || *n.src > n.max {
			bad(n.key, "%s", fmt.Sprintf("must be an integer from %d to %d", n.min, n.max))
			continue
		}
		*n.dst = *n.src
	}
	return l
}
