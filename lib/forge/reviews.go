package forge

import (
	"context"
	"fmt"

	"code.gitea.io/sdk/gitea"

	"github.com/disinto/disinto/lib/text"
)

// NewReview is a formal review to submit.
type NewReview struct {
	Event ReviewEvent
	Body  string
	// CommitID is the head SHA the review is about.
	CommitID string
}

// CreateReview submits a formal review on pull request n.
func (r *RepoClient) CreateReview(ctx context.Context, n int64, in NewReview) (Review, error) {
	rv, resp, err := r.c.api(heavy(ctx)).CreatePullReview(r.owner, r.name, n, gitea.CreatePullReviewOptions{
		State: gitea.ReviewStateType(in.Event), Body: r.c.text(in.Body), CommitID: in.CommitID,
	})
	if err := r.c.check(fmt.Sprintf("review %s#%d", r.slug, n), resp, err); err != nil {
		return Review{}, err
	}
	return toReview(rv), nil
}

// ListReviews returns all reviews of pull request n, oldest first.
func (r *RepoClient) ListReviews(ctx context.Context, n int64) ([]Review, error) {
	api := r.c.api(ctx)
	return paginate(func(page int) ([]Review, *gitea.Response, error) {
		rs, resp, err := api.ListPullReviews(r.owner, r.name, n, gitea.ListPullReviewsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
		})
		if err := r.c.check(fmt.Sprintf("list reviews %s#%d", r.slug, n), resp, err); err != nil {
			return nil, resp, err
		}
		res := make([]Review, 0, len(rs))
		for _, rv := range rs {
			res = append(res, toReview(rv))
		}
		return res, resp, nil
	})
}

// DismissReview dismisses review id on pull request n with a message.
func (r *RepoClient) DismissReview(ctx context.Context, n, id int64, message string) error {
	resp, err := r.c.api(withRetryablePost(ctx)).DismissPullReview(r.owner, r.name, n, id, gitea.DismissPullReviewOptions{Message: r.c.text(message)})
	return r.c.check(fmt.Sprintf("dismiss review %d on %s#%d", id, r.slug, n), resp, err)
}

// CombinedStatus returns the combined CI status of sha. State is empty when
// no status was ever posted.
func (r *RepoClient) CombinedStatus(ctx context.Context, sha string) (CombinedStatus, error) {
	cs, resp, err := r.c.api(ctx).GetCombinedStatus(r.owner, r.name, sha)
	if err := r.c.check(fmt.Sprintf("status of %s in %s", text.ShortSHA(sha), r.slug), resp, err); err != nil {
		return CombinedStatus{}, err
	}
	out := CombinedStatus{SHA: sha}
	for _, s := range cs.Statuses {
		out.Statuses = append(out.Statuses, CommitStatus{
			Context: s.Context, State: CIState(s.State), Description: s.Description, TargetURL: s.TargetURL, Updated: s.Updated,
		})
	}
	if len(out.Statuses) > 0 {
		out.State = CIState(cs.State)
	}
	return out, nil
}

// CreateStatus posts a commit status on sha (what a CI system does).
func (r *RepoClient) CreateStatus(ctx context.Context, sha string, s CommitStatus) error {
	// Statuses are keyed by context; posting one twice is harmless.
	_, resp, err := r.c.api(withRetryablePost(ctx)).CreateStatus(r.owner, r.name, sha, gitea.CreateStatusOption{
		State: gitea.StatusState(s.State), TargetURL: s.TargetURL, Description: r.c.text(s.Description), Context: s.Context,
	})
	return r.c.check(fmt.Sprintf("post status %s on %s in %s", s.Context, text.ShortSHA(sha), r.slug), resp, err)
}
