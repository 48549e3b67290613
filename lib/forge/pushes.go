package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
)

// Push is one push to a branch as the forge recorded it when it received
// the push (an activity of type commit_repo): the account that pushed, by
// id, and the commits the push brought. Unlike a commit's author and
// committer, which are whatever the pusher wrote, the record names the
// account whose credentials made the push.
type Push struct {
	// PusherID and Pusher are the account that pushed.
	PusherID int64
	Pusher   string
	// RepoID is the repository pushed to; Branch the branch.
	RepoID int64
	Branch string
	// Commits are the SHAs the push brought, the head first. The forge
	// lists at most a few of them ([ui] FEED_MAX_COMMIT_NUMS, 5 by
	// default) and counts them all in Total. A push that updates a branch
	// brings the commits that were not on it before; one that creates the
	// branch lists the newest commits of its history, new or not.
	Commits []string
	Total   int
	Created time.Time
}

// opCommitRepo is the activity type of a push to a branch, in Gitea and
// Forgejo alike.
const opCommitRepo = "commit_repo"

// pushContent is the content of a commit_repo activity: the forge's
// PushCommits, encoded without JSON tags.
type pushContent struct {
	Commits []struct {
		Sha1 string
	}
	HeadCommit *struct {
		Sha1 string
	}
	Len int
}

// PushesBy returns page (1-based) of the pushes login made to this
// repository's branches, newest first, read from login's activity feed
// restricted to what login performed; more reports whether another page
// may follow. Only login itself (or a site administrator) sees its
// pushes to private repositories. Activities that are not pushes, or
// that name no commit, are skipped.
func (r *RepoClient) PushesBy(ctx context.Context, login string, page int) (pushes []Push, more bool, err error) {
	repo, err := r.Get(ctx)
	if err != nil {
		return nil, false, err
	}
	as, resp, err := r.c.api(ctx).ListUserActivityFeeds(login, gitea.ListUserActivityFeedsOptions{
		ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}, OnlyPerformedBy: true,
	})
	if err := r.c.check(fmt.Sprintf("activity of %s, page %d", login, page), resp, err); err != nil {
		return nil, false, err
	}
	for _, a := range as {
		if a == nil || a.OpType != opCommitRepo || a.RepoID != repo.ID {
			continue
		}
		if p, ok := toPush(a); ok {
			pushes = append(pushes, p)
		}
	}
	more = len(as) > 0
	if total, ok := totalCount(resp); ok {
		more = page*pageSize < total
	}
	return pushes, more, nil
}

// toPush reads the push of activity a; ok is false when a names no
// commit (a branch created without content, a torn record).
func toPush(a *gitea.Activity) (Push, bool) {
	var c pushContent
	if a.Content == "" || json.Unmarshal([]byte(a.Content), &c) != nil {
		return Push{}, false
	}
	p := Push{PusherID: a.ActUserID, RepoID: a.RepoID, Total: c.Len, Created: a.Created,
		Branch: strings.TrimPrefix(a.RefName, "refs/heads/")}
	if a.ActUser != nil {
		p.Pusher = a.ActUser.UserName
	}
	seen := map[string]bool{}
	add := func(sha string) {
		if sha != "" && !seen[sha] {
			seen[sha] = true
			p.Commits = append(p.Commits, sha)
		}
	}
	if c.HeadCommit != nil {
		add(c.HeadCommit.Sha1)
	}
	for _, x := range c.Commits {
		add(x.Sha1)
	}
	return p, len(p.Commits) > 0
}
