package review

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
	"github.com/disinto/disinto/lib/verdict"
)

// commentInput is what a review comment is made of.
type commentInput struct {
	Head     string
	Previous string // previous reviewed SHA on a re-review
	Round    int    // 1 for a first review
	Out      verdict.Output
}

// short is a SHA as review comments show it: 7 characters, the form of
// the reference's review footers.
func short(sha string) string { return text.Abbrev(sha, 7) }

// title is the heading word of a review: "Review" or "Re-review (round k)".
func (in commentInput) title() string {
	if in.Previous != "" && in.Round > 1 {
		return fmt.Sprintf("Re-review (round %d)", in.Round)
	}
	return "Review"
}

// formatComment renders the review comment in the reference layout, with
// our machine-readable verdict marker beside the reference's reviewed
// marker so that authors never read the verdict from prose.
func formatComment(in commentInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## AI %s\n", in.title())
	b.WriteString(forge.RefMarker(forge.RefReviewed, in.Head) + "\n")
	b.WriteString(verdict.Marker(in.Out.Verdict, in.Head) + "\n\n")
	if md := neutralise(strings.TrimSpace(in.Out.ReviewMarkdown)); md != "" {
		b.WriteString(md + "\n\n")
	}
	b.WriteString("### Verdict\n")
	fmt.Fprintf(&b, "**%s**", in.Out.Verdict)
	if in.Out.VerdictReason != "" {
		fmt.Fprintf(&b, " — %s", neutralise(in.Out.VerdictReason))
	}
	b.WriteString("\n\n---\n")
	fmt.Fprintf(&b, "*Reviewed at `%s`", short(in.Head))
	if in.Previous != "" && in.Round > 1 {
		fmt.Fprintf(&b, " | Previous: `%s`", short(in.Previous))
	}
	b.WriteString(" | [AGENTS.md](AGENTS.md)*\n")
	return b.String()
}

// neutralise makes hidden comments in model-written text visible, so that
// text quoted from a pull request (which its author controls) can never
// add a reviewed or verdict marker to the review bot's comment.
func neutralise(s string) string { return forge.Neutralise(s) }

// formalBody is the body of the formal review.
func formalBody(in commentInput) string {
	s := fmt.Sprintf("AI %s: **%s**", in.title(), in.Out.Verdict)
	if in.Out.VerdictReason != "" {
		s += " — " + neutralise(in.Out.VerdictReason)
	}
	return s
}

// formatError renders the error comment the circuit breaker counts.
func formatError(head, reason string) string {
	var b strings.Builder
	b.WriteString("## AI Review — Error\n")
	b.WriteString(forge.RefMarker(forge.RefReviewError, head) + "\n\n")
	// The reason may quote the model's invalid output: a verdict marker in
	// it would read as the review bot's verdict on head.
	b.WriteString("Review failed: " + neutralise(reason) + "\n\n---\n")
	fmt.Fprintf(&b, "*Attempted at `%s`*\n", short(head))
	return b.String()
}

// hasErrorMarker reports whether body is an error comment for head.
func hasErrorMarker(body, head string) bool {
	return strings.Contains(body, forge.RefMarker(forge.RefReviewError, head))
}
