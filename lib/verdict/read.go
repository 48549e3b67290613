package verdict

import (
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Source tells where a reading came from.
type Source string

// Sources of a reading.
const (
	FromComment Source = "comment"       // the review bot's comment with our marker
	FromReview  Source = "formal-review" // the review bot's formal review at the head
	FromNone    Source = ""              // nothing for this head yet
)

// Reading is what the review said about one head commit.
type Reading struct {
	Verdict  Verdict
	SHA      string
	Feedback string // the review text to hand to the author
	Source   Source
	// Formal reports whether a formal review by the review bot at SHA with
	// a matching state exists; branch protection counts only those.
	Formal bool
}

// Read returns the review bot's verdict on head, from its comments (our
// marker, at exactly head) and its formal reviews (commit_id == head, not
// dismissed). Only reviewBot's writing counts: anyone can paste a marker.
// ok is false when the review bot has not yet reviewed head.
func Read(comments []forge.Comment, reviews []forge.Review, head, reviewBot string) (r Reading, ok bool) {
	if reviewBot == "" {
		return Reading{}, false // nobody's writing is the review bot's
	}
	for i := len(comments) - 1; i >= 0; i-- {
		c := comments[i]
		v, sha, found := CommentMarker(c, reviewBot)
		if !found || sha != head {
			continue
		}
		r = Reading{Verdict: v, SHA: sha, Feedback: c.Body, Source: FromComment}
		ok = true
		break
	}
	for i := len(reviews) - 1; i >= 0; i-- {
		rv := reviews[i]
		if !strings.EqualFold(rv.Author, reviewBot) || rv.CommitID != head || rv.Dismissed {
			continue
		}
		v, formal := ofEvent(rv.State)
		if !formal {
			continue
		}
		if ok {
			r.Formal = r.Verdict.Event() == rv.State
			return r, true
		}
		return Reading{Verdict: v, SHA: head, Feedback: rv.Body, Source: FromReview, Formal: true}, true
	}
	return r, ok
}

// ReadFormal returns the verdict on head of the newest formal review by a
// reviewer that may approve, for repositories without a review bot: an
// APPROVED or REQUEST_CHANGES review with commit_id == head, not
// dismissed, whose author mayApprove accepts. Comments are never read:
// without a review bot no marker has a trusted writer. mayApprove is asked
// only about the authors of such reviews, newest first, until one is
// accepted; its error ends the reading.
func ReadFormal(reviews []forge.Review, head string, mayApprove func(login string) (bool, error)) (Reading, bool, error) {
	asked := map[string]bool{}
	for i := len(reviews) - 1; i >= 0; i-- {
		rv := reviews[i]
		if rv.CommitID != head || rv.Dismissed || rv.Author == "" {
			continue
		}
		v, formal := ofEvent(rv.State)
		if !formal {
			continue
		}
		login := strings.ToLower(rv.Author)
		ok, seen := asked[login]
		if !seen {
			var err error
			if ok, err = mayApprove(rv.Author); err != nil {
				return Reading{}, false, err
			}
			asked[login] = ok
		}
		if ok {
			return Reading{Verdict: v, SHA: head, Feedback: rv.Body, Source: FromReview, Formal: true}, true, nil
		}
	}
	return Reading{}, false, nil
}

// ofEvent is the verdict a formal review of state e gives, if any (a
// plain comment gives none).
func ofEvent(e forge.ReviewEvent) (Verdict, bool) {
	switch e {
	case forge.ReviewApprove:
		return Approve, true
	case forge.ReviewRequestChanges:
		return RequestChanges, true
	}
	return "", false
}
