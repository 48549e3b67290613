package forge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"code.gitea.io/sdk/gitea"
)

// Commit is a commit as the forge reports it: its SHA and the git author
// and committer it records (names and emails are whatever the pusher
// wrote; they prove nothing on their own).
type Commit struct {
	SHA            string
	AuthorName     string
	AuthorEmail    string
	CommitterName  string
	CommitterEmail string
	Parents        []string
	// Message is the commit message; Created the committer's date.
	Message string
	Created time.Time
}

func toCommit(c *gitea.Commit) Commit {
	var out Commit
	if c.CommitMeta != nil {
		out.SHA = c.SHA
		out.Created = c.Created
	}
	if rc := c.RepoCommit; rc != nil {
		out.Message = rc.Message
		if rc.Author != nil {
			out.AuthorName, out.AuthorEmail = rc.Author.Name, rc.Author.Email
		}
		if rc.Committer != nil {
			out.CommitterName, out.CommitterEmail = rc.Committer.Name, rc.Committer.Email
		}
	}
	for _, p := range c.Parents {
		if p != nil {
			out.Parents = append(out.Parents, p.SHA)
		}
	}
	return out
}

// PathCommits returns the commits reachable from ref that changed path,
// newest first (git log's history of the path), all pages.
func (r *RepoClient) PathCommits(ctx context.Context, ref, path string) ([]Commit, error) {
	api := r.c.api(ctx)
	return paginate(func(page int) ([]Commit, *gitea.Response, error) {
		cs, resp, err := api.ListRepoCommits(r.owner, r.name, gitea.ListCommitOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
			SHA:         ref, Path: path,
		})
		if err := r.c.check(fmt.Sprintf("commits of %s on %s in %s", path, ref, r.slug), resp, err); err != nil {
			return nil, resp, err
		}
		out := make([]Commit, 0, len(cs))
		for _, c := range cs {
			out = append(out, toCommit(c))
		}
		return out, resp, nil
	})
}

// PullCommits returns the commits of pull request n, also after it was
// merged.
func (r *RepoClient) PullCommits(ctx context.Context, n int64) ([]Commit, error) {
	api := r.c.api(ctx)
	return paginate(func(page int) ([]Commit, *gitea.Response, error) {
		cs, resp, err := api.ListPullRequestCommits(r.owner, r.name, n, gitea.ListPullRequestCommitsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
		})
		if err := r.c.check(fmt.Sprintf("commits of %s#%d", r.slug, n), resp, err); err != nil {
			return nil, resp, err
		}
		out := make([]Commit, 0, len(cs))
		for _, c := range cs {
			out = append(out, toCommit(c))
		}
		return out, resp, nil
	})
}

// GetCommit returns commit sha (its parents included); ErrNotFound when
// the repository has no such commit.
func (r *RepoClient) GetCommit(ctx context.Context, sha string) (Commit, error) {
	c, resp, err := r.c.api(ctx).GetSingleCommit(r.owner, r.name, sha)
	if err := r.c.check(fmt.Sprintf("commit %s in %s", sha, r.slug), resp, err); err != nil {
		return Commit{}, err
	}
	return toCommit(c), nil
}

// RecentCommits returns the commits reachable from ref, newest first, down
// to the first one committed before since (which is left out): the
// recent history of a branch without reading all of it.
func (r *RepoClient) RecentCommits(ctx context.Context, ref string, since time.Time) ([]Commit, error) {
	api := r.c.api(ctx)
	out, err := paginateUntil(func(page int) ([]Commit, error) {
		cs, resp, err := api.ListRepoCommits(r.owner, r.name, gitea.ListCommitOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
			SHA:         ref,
		})
		if err := r.c.check(fmt.Sprintf("commits of %s in %s", ref, r.slug), resp, err); err != nil {
			return nil, err
		}
		res := make([]Commit, len(cs))
		for i, c := range cs {
			res[i] = toCommit(c)
		}
		return res, nil
	}, func(c Commit) bool { return c.Created.Before(since) })
	if errors.Is(err, ErrPageCap) {
		err = fmt.Errorf("commits of %s in %s: %w", ref, r.slug, err)
	}
	return out, err
}
