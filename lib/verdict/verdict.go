// Package verdict is the review protocol shared by the review agent, which
// writes verdicts, and the agents that read them before merging: the verdict
// vocabulary, the review output file the model writes, the machine-readable
// marker posted with every review, and the author-side reader that decides
// what the review said about a given head commit.
package verdict

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Verdict is a review's decision.
type Verdict string

// The verdicts. DISCUSS asks a question; for merging it counts as
// REQUEST_CHANGES.
const (
	Approve        Verdict = "APPROVE"
	RequestChanges Verdict = "REQUEST_CHANGES"
	Discuss        Verdict = "DISCUSS"
)

// Parse normalises s (case, '-' for '_', surrounding space and asterisks)
// and accepts only the three verdicts.
func Parse(s string) (Verdict, error) {
	n := strings.ToUpper(strings.Trim(strings.TrimSpace(s), "*"))
	n = strings.ReplaceAll(n, "-", "_")
	switch v := Verdict(n); v {
	case Approve, RequestChanges, Discuss:
		return v, nil
	}
	return "", fmt.Errorf("verdict %q is not one of APPROVE, REQUEST_CHANGES, DISCUSS", s)
}

// Validate reports whether v is one of the three verdicts.
func (v Verdict) Validate() error {
	_, err := Parse(string(v))
	return err
}

// Event is the formal review event a verdict is published as.
func (v Verdict) Event() forge.ReviewEvent {
	if v == Approve {
		return forge.ReviewApprove
	}
	return forge.ReviewRequestChanges
}

// Approved reports whether v allows a merge.
func (v Verdict) Approved() bool { return v == Approve }

// MarkerKind is the kind of our verdict marker:
// <!-- disinto:verdict sha=<head> value=<verdict> -->.
const MarkerKind = "verdict"

// Marker renders the machine-readable marker for a verdict at sha.
func Marker(v Verdict, sha string) string {
	s, err := forge.Marker{Kind: MarkerKind, Fields: map[string]string{"value": string(v), "sha": sha}}.String()
	if err != nil {
		// Kind and keys are constants; an error here is a programming error
		// caught by the tests.
		return ""
	}
	return s
}

// CommentMarker is ParseMarker of comment c when bot wrote it; a comment
// of anyone else's carries no verdict.
func CommentMarker(c forge.Comment, bot string) (Verdict, string, bool) {
	if !forge.WrittenBy(c.Author, bot) {
		return "", "", false
	}
	return ParseMarker(c.Body)
}

// ParseMarker returns the verdict and SHA of the last verdict marker in
// body. Free text is never read: a review that quotes **REQUEST_CHANGES**
// in its prose still has exactly one marker.
func ParseMarker(body string) (Verdict, string, bool) {
	m, ok := forge.FindMarker(body, MarkerKind)
	if !ok {
		return "", "", false
	}
	v, err := Parse(m.Fields["value"])
	if err != nil || m.Fields["sha"] == "" {
		return "", "", false
	}
	return v, m.Fields["sha"], true
}
