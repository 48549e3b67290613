package review

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/testguard"
	"github.com/disinto/disinto/lib/verdict"
)

// The test-integrity guard runs before every review session, on the pull
// request's whole diff against its base: a change that deletes a test
// file, deletes or renames a test, adds a skip marker or drops assertions
// (lib/testguard), without the issue it resolves asking for it, is
// reviewed REQUEST_CHANGES naming each case, whatever the model's verdict.
// The model still reviews the rest, told what the guard found.

// maxLinkedIssues bounds the issues read for one pull request.
const maxLinkedIssues = 3

// closing matches the references with which a pull request body says it
// resolves an issue.
var closing = regexp.MustCompile(`(?i)\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+#(\d+)\b`)

// linkedIssues returns the issues pr resolves: the one its disinto-issue
// marker names (the dev agent's pull requests carry it, and the agent
// neutralises markers in the text a session contributes to the body, so
// a session cannot point elsewhere), else those its body says it fixes,
// closes or resolves. A reference to the pull request itself is dropped.
// Whoever opened it from the base repository may name the issue by the
// marker, which says no more than a "Fixes #N" of theirs; a fork's is
// not read.
func linkedIssues(pr forge.PullRequest) []int64 {
	var refs []string
	if vs := pr.RefMarkersBy(forge.RefDisintoIssue, pr.Author); len(vs) > 0 {
		refs = vs[:1]
	} else {
		for _, m := range closing.FindAllStringSubmatch(pr.Body, -1) {
			refs = append(refs, m[1])
		}
	}
	var out []int64
	seen := map[int64]bool{}
	for _, r := range refs {
		n, err := strconv.ParseInt(strings.TrimSpace(r), 10, 64)
		if err != nil || n <= 0 || n == pr.Number || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		if len(out) == maxLinkedIssues {
			break
		}
	}
	return out
}

// testGuard returns what the diff of pr does to its tests that the issues
// it resolves do not ask for. An issue that cannot be read excuses
// nothing.
func (a *Agent) testGuard(ctx context.Context, pr forge.PullRequest, diff string, log zerolog.Logger) []testguard.Finding {
	found := testguard.Check(diff)
	if len(found) == 0 {
		return nil
	}
	var asked strings.Builder
	for _, n := range linkedIssues(pr) {
		is, err := a.opts.Forge.GetIssue(ctx, n)
		if err != nil {
			log.Warn().Err(err).Int64("issue", n).Msg("read the resolved issue for the test-integrity guard; it excuses nothing")
			continue
		}
		asked.WriteString(is.Title + "\n" + is.Body + "\n")
	}
	standing := testguard.Standing(found, asked.String())
	log.Info().Int("found", len(found)).Int("standing", len(standing)).Msg("test-integrity guard")
	return standing
}

// guardHeading heads the guard's section of the review and of the prompt.
const guardHeading = "Test integrity"

// guardList renders the findings as a Markdown list.
func guardList(fs []testguard.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("- " + testguard.Describe(f) + "\n")
	}
	return b.String()
}

// guardPrompt tells the model what the guard found, so that its review
// agrees with the verdict the orchestrator will publish. The names in the
// list come from the diff: they are fenced as untrusted data.
func guardPrompt(fs []testguard.Finding) string {
	return "The orchestrator's test-integrity check found that this pull request weakens its tests, and the issue it resolves " +
		"does not ask for that. Whatever else you find, the published verdict will be REQUEST_CHANGES; review the rest as usual.\n\n" +
		formula.Untrusted(guardList(fs))
}

// withGuard makes out a change request that names every finding, ahead
// of what the model wrote. Without findings out is returned as it is.
func withGuard(out verdict.Output, fs []testguard.Finding) verdict.Output {
	if len(fs) == 0 {
		return out
	}
	reason := fmt.Sprintf("the change weakens tests without the issue asking for it (%d case(s), see %s)", len(fs), guardHeading)
	if out.Verdict != verdict.Approve && out.VerdictReason != "" {
		reason += "; " + out.VerdictReason
	}
	section := "### " + guardHeading + "\n\n" +
		"This pull request weakens tests, and the issue it resolves does not ask for that:\n\n" + guardList(fs) +
		"\nRestore them and fix the code so that they pass as they were. If the issue does want a test removed or skipped, " +
		"it must say so: a line of the issue that names the test (or the file) and says remove, delete, drop, skip, disable, ignore, rename or obsolete.\n"
	md := section
	if m := strings.TrimSpace(out.ReviewMarkdown); m != "" {
		md += "\n" + m
	}
	findings := make([]verdict.Finding, 0, len(fs)+len(out.Findings))
	for _, f := range fs {
		findings = append(findings, verdict.Finding{Severity: verdict.High, File: f.File, Line: f.Line, Text: testguard.Describe(f)})
	}
	return verdict.Output{Verdict: verdict.RequestChanges, VerdictReason: reason, ReviewMarkdown: md,
		Findings: append(findings, out.Findings...)}
}
