package dev

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/patch"
)

// checkCI is the step of StageAwaitingCI: it reads the combined status
// of the head. Green (or no CI for a change without code) goes to review,
// red to the session with the failure, and a failure of the
// infrastructure re-runs CI once.
func (a *Agent) checkCI(ctx context.Context, snap *snapshot, st *State) error {
	if moved, err := a.followPull(ctx, snap, st); err != nil || moved {
		return err
	}
	log := a.issueLog(*st)
	if a.o.CISystem == config.CINone {
		return a.move(st, StageAwaitingReview)
	}
	cs, err := a.o.Forge.CombinedStatus(ctx, st.HeadSHA)
	if err != nil {
		return err
	}
	switch cs.State {
	case "":
		// No CI reported at all: a change without code needs none (the
		// reference's rule, which CI path filters rely on).
		nonCode, err := a.nonCode(ctx, st)
		if err != nil {
			return err
		}
		if nonCode {
			log.Info().Msg("no CI status on a pull request that changes no code; going to review")
			return a.move(st, StageAwaitingReview)
		}
		return a.overdue(ctx, st, a.lim.CITimeout, ledger.CodeCITimeout, "CI")
	case forge.CIPending:
		return a.overdue(ctx, st, a.lim.CITimeout, ledger.CodeCITimeout, "CI")
	case forge.CISuccess:
		log.Info().Msg("CI green")
		return a.move(st, StageAwaitingReview)
	}
	f := a.ciFailure(ctx, st, cs)
	report, lg := f.Statuses, f.Log
	if v := cilog.Classify(cilog.Evidence{Status: report, Log: lg.Text, Steps: lg.Steps}); v.Infra && st.InfraRetries < a.lim.InfraRetries {
		st.InfraRetries++
		log.Warn().Str("reason", v.Reason).Msg("CI failed on infrastructure; re-running it once")
		msg := fmt.Sprintf("ci: retrigger after infra failure (#%d)", st.Issue)
		head, err := a.o.Git.EmptyCommit(ctx, st.Branch, msg)
		if err != nil {
			return err
		}
		st.HeadSHA = head
		return a.move(st, StageAwaitingCI)
	}
	if st.CIFailedSHA != st.HeadSHA {
		// An attempt is counted once per head: the same red head seen
		// again (a state rebuilt after a restart) spends nothing more.
		st.CIFixes, st.CIFailedSHA = st.CIFixes+1, st.HeadSHA
	}
	if st.CIFixes > a.lim.CIFixes {
		return a.block(ctx, st, ledger.CodeCIExhausted,
			fmt.Sprintf("CI failed %d times on pull request #%d", st.CIFixes, st.PR), report)
	}
	log.Info().Int("attempt", st.CIFixes).Msg("CI red; resuming the session with the failure")
	// The log is CI output, which the code under test controls: masked
	// here, fenced by the follow-up.
	if st.News, err = a.ciNews(st, a.red.String(f.Report())); err != nil {
		return err
	}
	return a.move(st, StageFixing)
}

// ciLogTimeout bounds the search for a failed job's log; without one the
// session gets the statuses alone.
const ciLogTimeout = time.Minute

// CIFailure is what the session that fixes a red head is given: the
// statuses that are not green, then the log of the failed job when a
// source has one.
type CIFailure struct {
	// Statuses has a line for each status that is not green, with its
	// description and link.
	Statuses string
	// Log is the failed job's log; not Found when no source has one.
	Log cilog.Log
}

// Report is the text the session is given, before it is masked and
// fenced.
func (f CIFailure) Report() string { return joinReport(f.Statuses, f.Log.Report()) }

// ReadCIFailure reads what the session is given for the red head cs,
// with the log from logs (nil: the statuses alone), as the agent does.
// An error says why a log source failed; the statuses come all the same.
func ReadCIFailure(ctx context.Context, logs *cilog.Source, cs forge.CombinedStatus) (CIFailure, error) {
	return readCIFailure(ctx, logs, cs)
}

func readCIFailure(ctx context.Context, logs ciLogs, cs forge.CombinedStatus) (CIFailure, error) {
	f := CIFailure{Statuses: ciReport(cs)}
	if logs == nil {
		return f, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ciLogTimeout)
	defer cancel()
	lg, err := logs.Fetch(ctx, cs)
	f.Log = lg
	return f, err
}

// ciFailure reads what the session is given for the red head cs. A log
// source that fails is logged and left: the statuses still reach the
// session.
func (a *Agent) ciFailure(ctx context.Context, st *State, cs forge.CombinedStatus) CIFailure {
	f, err := readCIFailure(ctx, a.o.CILogs, cs)
	log := a.issueLog(*st)
	if err != nil {
		log.Warn().Str("error", a.red.Error(err)).Msg("CI log not read; the session gets the statuses only")
	}
	if f.Log.Found() {
		log.Info().Str("source", f.Log.Source).Str("job", f.Log.Job).Int("bytes", len(f.Log.Text)).Msg("CI log read")
	}
	return f
}

// joinReport puts the log section after the statuses.
func joinReport(statuses, logSection string) string {
	if logSection == "" {
		return statuses
	}
	return strings.TrimRight(statuses, "\n") + "\n\n" + logSection
}

// nonCode reports whether the pull request's head changes no code. The
// diff is read once per head.
func (a *Agent) nonCode(ctx context.Context, st *State) (bool, error) {
	if st.CodeCheckedSHA != st.HeadSHA {
		diff, err := a.o.Forge.PullDiff(ctx, st.PR)
		if err != nil {
			return false, err
		}
		st.CodeCheckedSHA, st.NonCodeSHA = st.HeadSHA, ""
		if patch.NonCode(patch.Files(diff)) {
			st.NonCodeSHA = st.HeadSHA
		}
		if err := a.st.save(*st); err != nil {
			return false, err
		}
	}
	return st.NonCodeSHA == st.HeadSHA, nil
}

// ciReport describes every non-green status with its description and link.
func ciReport(cs forge.CombinedStatus) string {
	var b strings.Builder
	for _, s := range cs.Statuses {
		if s.State == forge.CISuccess {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s", s.Context, s.State)
		if s.Description != "" {
			fmt.Fprintf(&b, ": %s", s.Description)
		}
		if s.TargetURL != "" {
			fmt.Fprintf(&b, " (%s)", s.TargetURL)
		}
		b.WriteString("\n")
	}
	return b.String()
}
