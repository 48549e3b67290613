package review

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/testguard"
	"github.com/disinto/disinto/lib/verdict"
)

// maxResponseBytes bounds the author's replies quoted in a re-review.
const maxResponseBytes = 8000

// promptInput is what a review prompt is made of.
type promptInput struct {
	c    candidate
	diff string // the pull request's full diff, from the forge
	re   *rereview
	// guard is what the test-integrity guard found (guard.go).
	guard []testguard.Finding
}

// rereview is the context of a re-review: what was said and what changed.
type rereview struct {
	prev     string // the previously reviewed head
	previous string // the previous review comment
	response string // the author's replies since, "" when none
	// incHeading and inc are the incremental diff section: its heading
	// (which says how the range was computed) and its body.
	incHeading string
	inc        string
}

// rereviewContext gathers the previous review, the author's replies since
// and the diff between the previously reviewed head and the new one.
func (a *Agent) rereviewContext(ctx context.Context, c candidate, log zerolog.Logger) *rereview {
	pr, st := c.pr, c.st
	re := &rereview{prev: st.Head, previous: st.CommentBody}
	comments, err := a.opts.Forge.ListComments(ctx, pr.Number)
	if err != nil {
		log.Warn().Err(err).Msg("list comments for the author's response")
	}
	re.response = authorResponse(comments, a.bot, st.Head)
	if re.previous == "" {
		re.previous = previousReview(comments, a.bot, st.Head)
	}
	rng := short(st.Head) + ".." + short(pr.HeadSHA)
	inc, ancestor, err := a.opts.Checkout.Diff(ctx, st.Head, pr.HeadSHA)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("incremental diff")
		re.incHeading = "Incremental Diff (unavailable)"
		re.inc = fmt.Sprintf("The previously reviewed commit %s is no longer available (history was rewritten). Judge the fixes against the full diff of the pull request.\n", short(st.Head))
		return re
	case !ancestor:
		re.incHeading = fmt.Sprintf("Incremental Diff (%s, history rewritten: tree of the previous head against the new head)", rng)
	default:
		re.incHeading = fmt.Sprintf("Incremental Diff (%s)", rng)
	}
	shown, note := patch.Truncate(inc, a.opts.DiffLimit)
	re.incHeading += note
	re.inc = formula.Untrusted(shown) + "\n"
	return re
}

// previousReview returns the review bot's comment for sha.
func previousReview(comments []forge.Comment, bot, sha string) string {
	for i := len(comments) - 1; i >= 0; i-- {
		c := comments[i]
		if _, s, ok := verdict.CommentMarker(c, bot); ok && s == sha {
			return c.Body
		}
	}
	return ""
}

// authorResponse collects what others wrote on the pull request after the
// review bot's review of prev, newest last, bounded; bot bookkeeping
// comments (hidden markers) are left out.
func authorResponse(comments []forge.Comment, bot, prev string) string {
	after := -1
	for i, c := range comments {
		if _, s, ok := verdict.CommentMarker(c, bot); ok && s == prev {
			after = i
		}
	}
	if after < 0 {
		return ""
	}
	var parts []string
	for _, c := range comments[after+1:] {
		if strings.EqualFold(c.Author, bot) || strings.Contains(c.Body, "<!-- ") {
			continue
		}
		parts = append(parts, fmt.Sprintf("**%s** wrote:\n\n%s", c.Author, strings.TrimSpace(c.Body)))
	}
	s := strings.Join(parts, "\n\n---\n\n")
	if len(s) > maxResponseBytes {
		s = patch.CutAtLine(s, maxResponseBytes) + "\n[…]\n"
	}
	return s
}

// contextBlocks builds the pull request context the formula's steps refer
// to: metadata, description, changed files, the (bounded) diff and, on a
// re-review, the previous review and the diff since it.
func (a *Agent) contextBlocks(p promptInput) []formula.Block {
	pr := p.c.pr
	shown, note := patch.Truncate(p.diff, a.opts.DiffLimit)
	meta := fmt.Sprintf("**%s**\n\n- Pull request: #%d\n- Branches: %s → %s\n- Head commit: %s\n- CI: %s\n- Re-review: %t\n",
		pr.Title, pr.Number, pr.Head, pr.Base, pr.HeadSHA, p.c.ciMsg, p.re != nil)
	blocks := []formula.Block{
		{Title: "Pull request", Body: meta},
		{Title: "Description (written by the author; untrusted)", Body: orDash(pr.Body), Untrusted: true},
		{Title: "Changed files", Body: strings.Join(patch.Files(p.diff), "\n"), Untrusted: true},
		{Title: "Diff" + note, Body: shown, Untrusted: true},
	}
	if len(p.guard) > 0 {
		blocks = append(blocks, formula.Block{Title: guardHeading + " (found by the orchestrator)", Body: guardPrompt(p.guard)})
	}
	if p.re == nil {
		return blocks
	}
	return append(blocks, formula.Block{Title: "This is a RE-REVIEW", Body: p.re.body(pr)})
}

// body renders the re-review section (the same text goes into a fresh and
// into a resumed session).
func (re *rereview) body(pr forge.PullRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your previous review was of `%s` and asked for changes; the author has pushed `%s` since. "+
		"Report each earlier finding as FIXED, NOT FIXED or PARTIAL (section `### Previous Findings`), "+
		"and list problems the new commits introduce (section `### New Issues`).\n\n", short(re.prev), short(pr.HeadSHA))
	// The previous review quotes the pull request; the response and the
	// diff are the author's: all are data, never instructions.
	b.WriteString("### Previous Review\n\n" + formula.Untrusted(orDash(re.previous)) + "\n\n")
	if re.response != "" {
		b.WriteString("### Author's Response (untrusted)\n\n" + formula.Untrusted(re.response) + "\n\n")
	}
	b.WriteString("### " + re.incHeading + "\n\n" + re.inc)
	return b.String()
}

// resumePrompt is the message that continues an earlier review session:
// only what changed, and the output contract again.
func resumePrompt(p promptInput, outFile string) string {
	pr := p.c.pr
	var b strings.Builder
	fmt.Fprintf(&b, "## This is a RE-REVIEW\n\nPull request #%d (**%s**) has a new head commit %s. CI: %s. "+
		"The working directory is now checked out at that commit.\n\n", pr.Number, pr.Title, pr.HeadSHA, p.c.ciMsg)
	b.WriteString(p.re.body(pr))
	if len(p.guard) > 0 {
		b.WriteString("\n## " + guardHeading + " (found by the orchestrator)\n\n" + guardPrompt(p.guard) + "\n")
	}
	fmt.Fprintf(&b, "\n## Output\n\nFollow the same review procedure as before. Write your new review as a single JSON object "+
		"to the review file %s (also in $%s), replacing anything there:\n\n    %s\n\n"+
		"Never post to the forge yourself; the orchestrator publishes the review.\n",
		outFile, formula.EnvReviewFile, formula.ReviewSchema)
	return b.String()
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}
