// Package cilog finds the log of a failed CI job, so the model that has to
// fix the failure sees what CI printed instead of a one-line status. Its
// sources, tried in order: Woodpecker's API (when the project's CI is
// Woodpecker), then the forge's Actions job logs (Gitea 1.26; Forgejo 16),
// found from the failing commit statuses. Where neither has a log the
// caller keeps the statuses' descriptions and links. Classify tells an
// infrastructure failure from the code's, from the statuses and the log.
//
// Every log is cut tail-first to a byte budget. Logs are untrusted text:
// callers redact and fence them before they reach a prompt.
package cilog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Log sources.
const (
	SourceWoodpecker = "woodpecker"
	SourceActions    = "actions"
)

// maxJobs bounds the failed steps or jobs whose logs one Fetch reads.
const maxJobs = 3

// Step is a failed step of a CI job.
type Step struct {
	Name string
	// ExitCode is the step's exit code; -1 when the CI system does not
	// report one.
	ExitCode int
}

// Log is the log of a failed CI job, cut to the budget.
type Log struct {
	// Source is SourceWoodpecker or SourceActions; empty when no log was
	// found.
	Source string
	// Job names what failed, e.g. "pipeline 12" or "ci/test".
	Job string
	// URL is where a human reads the log; it never carries a token.
	URL string
	// Text is the end of the log, at most the budget in bytes.
	Text string
	// Cut reports that the head of the log was dropped.
	Cut bool
	// Steps are the failed steps, when the CI system reports them.
	Steps []Step
}

// Found reports whether l holds a log.
func (l Log) Found() bool { return l.Source != "" && l.Text != "" }

// Report is the log as a section of a CI report: a heading line naming
// the job and whether the head was cut, then the log text. Empty when no
// log was found. The text is not fenced; the prompt that carries the
// whole report fences it.
func (l Log) Report() string {
	if !l.Found() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Log of %s (%s", l.Job, l.Source)
	for _, s := range l.Steps {
		if s.ExitCode >= 0 {
			fmt.Fprintf(&b, "; step %s exited %d", s.Name, s.ExitCode)
		} else {
			fmt.Fprintf(&b, "; step %s failed", s.Name)
		}
	}
	if l.Cut {
		fmt.Fprintf(&b, "; last %d bytes", len(l.Text))
	}
	b.WriteString("):\n")
	b.WriteString(l.Text)
	b.WriteString("\n")
	return b.String()
}

// ActionsAPI is the part of *forge.RepoClient that reads Actions jobs.
// Both methods wrap forge.ErrNotFound when the forge has no such job or
// serves no such endpoint (Actions disabled, Forgejo before 16, Gitea
// before 1.24).
type ActionsAPI interface {
	ActionsJob(ctx context.Context, id int64) (forge.ActionsJob, error)
	ActionsJobLogs(ctx context.Context, id int64) (string, error)
}

var _ ActionsAPI = (*forge.RepoClient)(nil)

// Options configures a Source. Every source is optional.
type Options struct {
	// Woodpecker reads pipelines and step logs from Woodpecker's API;
	// nil when the project's CI is not Woodpecker.
	Woodpecker *Woodpecker
	// Actions reads job logs from the forge.
	Actions ActionsAPI
	// Budget bounds the log text in bytes; DefaultBudget when zero.
	Budget int
}

// Source finds the log of a failed CI run. It is safe for concurrent use.
type Source struct {
	o Options
}

// New returns a Source reading from the sources o names.
func New(o Options) *Source {
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	return &Source{o: o}
}

// Fetch returns the log of the failure cs reports, from the first source
// that has one. A Log that is not Found, with a nil error, means no source
// had a log (the caller falls back to the statuses); an error says why a
// source that should have had one did not, and may come with the log of a
// later source. A nil Source has no log.
func (s *Source) Fetch(ctx context.Context, cs forge.CombinedStatus) (Log, error) {
	if s == nil {
		return Log{}, nil
	}
	failed := failing(cs)
	if len(failed) == 0 {
		return Log{}, nil
	}
	var errs []error
	if s.o.Woodpecker != nil {
		l, err := s.o.Woodpecker.fetch(ctx, cs.SHA, failed, s.o.Budget)
		if err != nil {
			errs = append(errs, err)
		} else if l.Found() {
			return l, nil
		}
	}
	if s.o.Actions != nil {
		l, err := actionsLog(ctx, s.o.Actions, cs.SHA, failed, s.o.Budget)
		if err != nil {
			errs = append(errs, err)
		} else if l.Found() {
			return l, errors.Join(errs...)
		}
	}
	return Log{}, errors.Join(errs...)
}

// failing returns the statuses of cs that report a failure: any state
// but success and pending (failure, error, and the unexpected, such as
// warning, as the dev agent reads them).
func failing(cs forge.CombinedStatus) []forge.CommitStatus {
	var out []forge.CommitStatus
	for _, st := range cs.Statuses {
		if st.State != forge.CISuccess && st.State != forge.CIPending && st.State != "" {
			out = append(out, st)
		}
	}
	return out
}
