package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/disinto/disinto/lib/text"
)

// NewPull describes a pull request to open.
type NewPull struct {
	Title string
	Body  string
	Head  string // branch in this repository, or "<fork owner>:<branch>"
	Base  string
}

// CreatePull opens a pull request.
func (r *RepoClient) CreatePull(ctx context.Context, in NewPull) (PullRequest, error) {
	p, resp, err := r.c.api(heavy(ctx)).CreatePullRequest(r.owner, r.name, gitea.CreatePullRequestOption{
		Head: in.Head, Base: in.Base, Title: r.c.text(in.Title), Body: r.c.text(in.Body),
	})
	if err := r.c.check(fmt.Sprintf("create pull %s->%s in %s", in.Head, in.Base, r.slug), resp, err); err != nil {
		return PullRequest{}, err
	}
	return toPull(p), nil
}

// GetPull returns pull request n.
func (r *RepoClient) GetPull(ctx context.Context, n int64) (PullRequest, error) {
	p, resp, err := r.c.api(ctx).GetPullRequest(r.owner, r.name, n)
	if err := r.c.check(fmt.Sprintf("get pull %s#%d", r.slug, n), resp, err); err != nil {
		return PullRequest{}, err
	}
	return toPull(p), nil
}

// ListPulls returns the pull requests in state (open when empty), all pages.
func (r *RepoClient) ListPulls(ctx context.Context, state State) ([]PullRequest, error) {
	if state == "" {
		state = StateOpen
	}
	api := r.c.api(ctx)
	return paginate(func(page int) ([]PullRequest, *gitea.Response, error) {
		ps, resp, err := api.ListRepoPullRequests(r.owner, r.name, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
			State:       gitea.StateType(state),
		})
		if err := r.c.check("list pulls "+r.slug, resp, err); err != nil {
			return nil, resp, err
		}
		res := make([]PullRequest, 0, len(ps))
		for _, p := range ps {
			res = append(res, toPull(p))
		}
		return res, resp, nil
	})
}

// RecentPulls returns the pull requests in state updated at or after
// since, most recently updated first: the recent ones without reading a
// long history.
func (r *RepoClient) RecentPulls(ctx context.Context, state State, since time.Time) ([]PullRequest, error) {
	api := r.c.api(ctx)
	out, err := paginateUntil(func(page int) ([]PullRequest, error) {
		ps, resp, err := api.ListRepoPullRequests(r.owner, r.name, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
			State:       gitea.StateType(state),
			Sort:        "recentupdate",
		})
		if err := r.c.check("list pulls "+r.slug, resp, err); err != nil {
			return nil, err
		}
		res := make([]PullRequest, len(ps))
		for i, p := range ps {
			res[i] = toPull(p)
		}
		return res, nil
	}, func(p PullRequest) bool { return p.Updated.Before(since) })
	if errors.Is(err, ErrPageCap) {
		err = fmt.Errorf("list pulls %s: %w", r.slug, err)
	}
	return out, err
}

// FindPullByHead returns the newest pull request (open first, then any
// state) whose head is branch, or ErrNotFound. It matches the branch name
// only: anyone can open a pull request from a fork with that name, so
// check Author and FromFork before taking the result as one's own.
func (r *RepoClient) FindPullByHead(ctx context.Context, branch string) (PullRequest, error) {
	for _, st := range []State{StateOpen, StateAll} {
		ps, err := r.ListPulls(ctx, st)
		if err != nil {
			return PullRequest{}, err
		}
		var best *PullRequest
		for i := range ps {
			if ps[i].Head == branch && (best == nil || ps[i].Number > best.Number) {
				best = &ps[i]
			}
		}
		if best != nil {
			return *best, nil
		}
	}
	return PullRequest{}, fmt.Errorf("pull with head %q in %s: %w", branch, r.slug, ErrNotFound)
}

// PullDiff returns the unified diff of pull request n.
func (r *RepoClient) PullDiff(ctx context.Context, n int64) (string, error) {
	d, resp, err := r.c.api(ctx).GetPullRequestDiff(r.owner, r.name, n, gitea.PullRequestDiffOptions{})
	if err := r.c.check(fmt.Sprintf("diff of %s#%d", r.slug, n), resp, err); err != nil {
		return "", err
	}
	return string(d), nil
}

// ClosePull closes pull request n without merging.
func (r *RepoClient) ClosePull(ctx context.Context, n int64) error {
	st := gitea.StateClosed
	_, resp, err := r.c.api(ctx).EditPullRequest(r.owner, r.name, n, gitea.EditPullRequestOption{State: &st})
	return r.c.check(fmt.Sprintf("close pull %s#%d", r.slug, n), resp, err)
}

// MergeOptions controls Merge.
type MergeOptions struct {
	// HeadSHA pins the merge: if the head moved, nothing is merged and
	// ErrHeadMoved is returned. Required.
	HeadSHA string
	// Style is merge, rebase, squash...; empty means merge.
	Style string
	// Message overrides the merge commit message.
	Message string
	// DeleteBranch deletes the head branch after merging.
	DeleteBranch bool
}

// Merge merges pull request n if its head is still opts.HeadSHA. Errors:
// ErrHeadMoved (head differs; nothing merged), ErrAlreadyMerged,
// ErrMergeBlocked (protection, permissions, not mergeable), ErrMergePending
// (the forge still checks mergeability after every retry), ErrConflict
// (merge conflicts), ErrNotFound (missing or closed).
func (r *RepoClient) Merge(ctx context.Context, n int64, opts MergeOptions) error {
	if opts.HeadSHA == "" {
		return fmt.Errorf("merge %s#%d: head SHA required", r.slug, n)
	}
	style := opts.Style
	if style == "" {
		style = "merge"
	}
	body := map[string]any{
		"Do":                        style,
		"head_commit_id":            opts.HeadSHA,
		"delete_branch_after_merge": opts.DeleteBranch,
	}
	if opts.Message != "" {
		body["MergeMessageField"] = r.c.text(opts.Message)
	}
	// Pinned to a head SHA, a repeated merge cannot merge anything twice.
	var err error
	for attempt := 0; ; attempt++ {
		err = r.c.do(heavy(withRetryablePost(ctx)), "POST", r.path("/pulls/%d/merge", n), nil, body, nil)
		// Right after a push the forge is still checking mergeability and
		// asks to try again later; that settles within seconds.
		if err == nil || attempt >= mergeCheckRetries || !isStatus(err, http.StatusMethodNotAllowed) ||
			!strings.Contains(err.Error(), "try again later") {
			break
		}
		if werr := r.c.wait(ctx, backoff(attempt)); werr != nil {
			return fmt.Errorf("merge %s#%d: %w", r.slug, n, werr)
		}
	}
	if err == nil {
		return nil
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return fmt.Errorf("merge %s#%d: %w", r.slug, n, err)
	}
	switch se.Status {
	case http.StatusConflict:
		if strings.Contains(se.Message, "head out of date") {
			return fmt.Errorf("merge %s#%d at %s: %w: %w", r.slug, n, text.ShortSHA(opts.HeadSHA), ErrHeadMoved, se)
		}
	case http.StatusMethodNotAllowed:
		if strings.Contains(se.Message, "already merged") {
			return fmt.Errorf("merge %s#%d: %w: %w", r.slug, n, ErrAlreadyMerged, se)
		}
		if strings.Contains(se.Message, "try again later") {
			// Gitea also answers so, for good, when an earlier merge was cut
			// short after its push: the head is on the base branch, and only
			// the record of the merge is missing.
			if done, lerr := r.recordLanded(ctx, n, opts.HeadSHA); done || lerr != nil {
				return lerr
			}
			return fmt.Errorf("merge %s#%d: %w: %w", r.slug, n, ErrMergePending, se)
		}
		// Tell a lost race (merged meanwhile) from a real block.
		pr, gerr := r.GetPull(ctx, n)
		if gerr == nil && pr.Merged {
			return fmt.Errorf("merge %s#%d: %w: %w", r.slug, n, ErrAlreadyMerged, se)
		}
		if gerr == nil && pr.HeadSHA != opts.HeadSHA {
			return fmt.Errorf("merge %s#%d at %s: %w: %w", r.slug, n, text.ShortSHA(opts.HeadSHA), ErrHeadMoved, se)
		}
		return fmt.Errorf("merge %s#%d: %w: %w", r.slug, n, ErrMergeBlocked, se)
	}
	return fmt.Errorf("merge %s#%d: %w", r.slug, n, se)
}

// landedDepth is how many of the newest commits of the base branch are
// searched for a merge of the pull request that the forge did not record.
const landedDepth = 50

// recordLanded finds out whether the head of pull request n is on its base
// branch already (a merge cut short after its push, which Gitea never
// records and then refuses for good with "try again later"), and if so
// marks the pull request as merged by the commit that brought the head in.
// done reports that the merge is recorded now; a forge that refuses to
// record it yields a *LandedError. Not being able to tell is no error:
// the caller reports the merge as pending.
func (r *RepoClient) recordLanded(ctx context.Context, n int64, head string) (done bool, err error) {
	pr, err := r.GetPull(ctx, n)
	if err != nil || pr.Merged || pr.State != StateOpen || pr.HeadSHA != head {
		return false, nil
	}
	commits, resp, err := r.c.api(ctx).ListRepoCommits(r.owner, r.name, gitea.ListCommitOptions{
		ListOptions: gitea.ListOptions{PageSize: landedDepth}, SHA: pr.Base})
	if r.c.check("list commits of "+r.slug+"@"+pr.Base, resp, err) != nil {
		return false, nil
	}
	sha := ""
	for _, c := range commits {
		if c.SHA == head {
			sha = c.SHA
		}
		for _, p := range c.Parents {
			if p != nil && p.SHA == head {
				sha = c.SHA
			}
		}
		if sha != "" {
			break
		}
	}
	if sha == "" {
		return false, nil
	}
	body := map[string]any{"Do": "manually-merged", "merge_commit_id": sha}
	if err := r.c.do(withRetryablePost(ctx), "POST", r.path("/pulls/%d/merge", n), nil, body, nil); err != nil {
		if p, gerr := r.GetPull(ctx, n); gerr == nil && p.Merged {
			return true, nil
		}
		return false, &LandedError{PR: n, SHA: sha, Err: err}
	}
	return true, nil
}

// mergeCheckRetries bounds waiting for a pending mergeability check.
const mergeCheckRetries = 8
