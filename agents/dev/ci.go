package dev

import (
	"context"
	"fmt"
	"regexp"
	"strings"

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
	report := ciReport(cs)
	if infraRe.MatchString(report) && st.InfraRetries < a.lim.InfraRetries {
		st.InfraRetries++
		log.Warn().Msg("CI failed on infrastructure; re-running it once")
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
	if st.News, err = a.ciNews(st, report); err != nil {
		return err
	}
	return a.move(st, StageFixing)
}

// infraRe recognises CI failures of the infrastructure rather than the code.
var infraRe = regexp.MustCompile(`(?i)failed to connect|connection (timed out|refused|reset)|tls handshake timeout|` +
	`docker pull.*timeout|no space left on device|exit code 137|oom|killed|infrastructure|runner (lost|offline)`)

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

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
