package vault

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// provenanceForge is what the provenance check reads from the forge.
type provenanceForge interface {
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	PathCommits(ctx context.Context, ref, path string) ([]forge.Commit, error)
	PullCommits(ctx context.Context, n int64) ([]forge.Commit, error)
	GetCommit(ctx context.Context, sha string) (forge.Commit, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	CollaboratorPermission(ctx context.Context, login string) (forge.Permission, error)
	// Me and PushesBy read the forge's record of who pushed what: only
	// the vault bot's own pushes make a direct (low-tier) action.
	Me(ctx context.Context) (forge.User, error)
	PushesBy(ctx context.Context, login string, page int) ([]forge.Push, bool, error)
}

var _ provenanceForge = (*forge.RepoClient)(nil)

// Identity is a git author identity.
type Identity struct{ Name, Email string }

// approval is the outcome of the provenance check: ok with how, or not ok
// with why.
type approval struct {
	ok  bool
	how string
	// approver is the administrator whose approval counted; "" for a
	// low-tier direct commit, which no human saw.
	approver string
	reason   string
}

// pending is a refusal: the action waits.
func pending(format string, args ...any) approval {
	return approval{reason: fmt.Sprintf(format, args...)}
}

// prover checks how actions reached the primary branch at one commit.
type prover struct {
	f       provenanceForge
	primary string
	head    string
	vault   Identity
	admins  []string
	bots    []string
	// pulls are the ops repository's closed pull requests, listed once.
	pulls []forge.PullRequest
	// pushes is what the forge records of the vault bot's pushes to the
	// primary branch, read when a direct action is checked.
	pushes pushLog
}

// verify decides whether action a (tier t) at p.head came the way its
// tier requires. Every commit of the primary branch that touched the file
// is taken into account, so nothing added or changed beside the approved
// path passes. An error is transient (the forge did not answer); the
// action is looked at again next cycle.
func (p *prover) verify(ctx context.Context, a Action, t Tier) (approval, error) {
	path := ActionPath(a.ID)
	commits, err := p.f.PathCommits(ctx, p.head, path)
	if err != nil {
		return approval{}, err
	}
	if len(commits) == 0 {
		return approval{}, fmt.Errorf("the forge knows no commit of %s at %s yet", path, text.ShortSHA(p.head))
	}
	now, err := p.f.GetFile(ctx, path, p.head)
	if err != nil {
		return approval{}, err
	}
	if t != TierLow || !p.allByVault(commits) {
		return p.viaPull(ctx, a, t, commits, now)
	}
	stray, err := p.pushes.notPushed(ctx, p.f, p.primary, commits)
	if err != nil {
		return approval{}, err
	}
	if stray == "" {
		return approval{ok: true, how: "direct commit pushed by the vault bot " + p.pushes.me.Login + " (low tier)"}, nil
	}
	ap, err := p.viaPull(ctx, a, t, commits, now)
	if err != nil || ap.ok {
		return ap, err
	}
	return pending("low tier: commit %s carries the vault identity, but the forge records no push of it to %s by the vault bot %s",
		text.ShortSHA(stray), p.primary, p.pushes.me.Login), nil
}

// allByVault reports whether every commit was authored and committed as
// the vault identity: a claim anyone who can push may write, which only
// the forge's record of the push confirms (pushLog).
func (p *prover) allByVault(cs []forge.Commit) bool {
	if p.vault.Email == "" {
		return false
	}
	for _, c := range cs {
		if c.AuthorEmail != p.vault.Email || c.CommitterEmail != p.vault.Email {
			return false
		}
	}
	return true
}

// viaPull looks for the merged pull request that brought the file and an
// administrator's approval of its final head.
func (p *prover) viaPull(ctx context.Context, a Action, t Tier, commits []forge.Commit, now forge.File) (approval, error) {
	if p.pulls == nil {
		ps, err := p.f.ListPulls(ctx, forge.StateClosed)
		if err != nil {
			return approval{}, err
		}
		p.pulls = ps
	}
	why := pending("%s tier: no merged pull request from %s%s brought it", t, BranchPrefix, a.ID)
	for i := len(p.pulls) - 1; i >= 0; i-- {
		pr := p.pulls[i]
		if !pr.Merged || pr.FromFork || pr.Base != p.primary || pr.Head != BranchPrefix+a.ID {
			continue
		}
		ap, err := p.pull(ctx, pr, commits, now)
		if err != nil || ap.ok {
			return ap, err
		}
		why = ap
	}
	return why, nil
}

// pull checks one merged pull request.
func (p *prover) pull(ctx context.Context, pr forge.PullRequest, commits []forge.Commit, now forge.File) (approval, error) {
	prCommits, err := p.f.PullCommits(ctx, pr.Number)
	if err != nil {
		return approval{}, err
	}
	in := map[string]bool{pr.MergedSHA: true}
	for _, c := range prCommits {
		in[c.SHA] = true
	}
	var outside []forge.Commit
	for _, c := range commits {
		if !in[c.SHA] {
			outside = append(outside, c)
		}
	}
	atHead, err := p.f.GetFile(ctx, now.Path, pr.HeadSHA)
	if errors.Is(err, forge.ErrNotFound) || (err == nil && atHead.SHA != now.SHA) {
		return pending("the action differs from its content at #%d's head %s", pr.Number, text.ShortSHA(pr.HeadSHA)), nil
	}
	if err != nil {
		return approval{}, err
	}
	merged := "merged"
	if len(outside) > 0 {
		ap, err := p.rebased(ctx, pr, prCommits, outside, atHead)
		if err != nil || !ap.ok {
			return ap, err
		}
		merged = "rebase-merged"
	}
	reviews, err := p.f.ListReviews(ctx, pr.Number)
	if err != nil {
		return approval{}, err
	}
	why := pending("awaiting admin approval: #%d has no approval at its final head %s", pr.Number, text.ShortSHA(pr.HeadSHA))
	for _, r := range reviews {
		if r.State != forge.ReviewApprove || r.Dismissed {
			continue
		}
		if r.CommitID != pr.HeadSHA {
			why = pending("awaiting admin approval: %s approved #%d at %s, not at its final head %s",
				r.Author, pr.Number, text.ShortSHA(r.CommitID), text.ShortSHA(pr.HeadSHA))
			continue
		}
		ok, reason, err := p.isAdmin(ctx, r.Author, pr.Author)
		if err != nil {
			return approval{}, err
		}
		if ok {
			return approval{ok: true, approver: r.Author,
				how: fmt.Sprintf("pull request #%d approved by %s at %s, %s", pr.Number, r.Author, text.ShortSHA(r.CommitID), merged)}, nil
		}
		why = pending("awaiting admin approval: the approval of #%d by %s does not count: %s", pr.Number, r.Author, reason)
	}
	return why, nil
}

// isAdmin decides whether login's approval counts: a human (no bot, not
// the pull request's author) who administers the ops repository. With an
// admin list configured, login must be on it, and the forge, when it
// answers, must agree; without one, the forge's answer decides.
func (p *prover) isAdmin(ctx context.Context, login, author string) (bool, string, error) {
	switch {
	case login == "":
		return false, "no reviewer", nil
	case login == author:
		return false, "the author approved their own pull request", nil
	case slices.Contains(p.bots, login):
		return false, "a bot", nil
	case len(p.admins) > 0 && !slices.Contains(p.admins, login):
		return false, "not an administrator", nil
	}
	perm, err := p.f.CollaboratorPermission(ctx, login)
	switch {
	case errors.Is(err, forge.ErrForbidden) && len(p.admins) > 0:
		return true, "", nil // the forge will not say to us; the configured list does
	case errors.Is(err, forge.ErrForbidden), errors.Is(err, forge.ErrNotFound):
		return false, "the forge does not confirm an administrator", nil
	case err != nil:
		return false, "", err
	case perm != forge.PermAdmin && perm != forge.PermOwner:
		return false, fmt.Sprintf("%s permission on the ops repository, not admin", perm), nil
	}
	return true, "", nil
}

// rebased decides whether the commits of the primary branch that touched
// the action outside pull request pr's own commits are pr's commits
// rebased (or squashed) onto the branch by the forge's merge. Gitea and
// Forgejo record such a merge as the pull request merged, with
// merge_commit_sha the last commit the merge wrote, and the commits
// themselves are new: nothing ties them to the approved ones but the
// record. So the window the merge can have written is taken from the
// record, never from commit messages: the len(prCommits) commits down the
// first-parent line from merge_commit_sha (one squash commit lies within
// them too), or, when merge_commit_sha is a merge commit over the rebased
// commits (the rebase-merge style), it and as many commits down its
// second parent's line. It is accepted when
//   - every outside commit lies in that window;
//   - the action before the window is as it was where the pull request's
//     branch started, so the window's change to it is the change the
//     approver saw (a file pushed to the branch earlier and then only
//     carried along is refused);
//   - the action at merge_commit_sha is the approved head's (atHead).
//
// A commit pushed after the approval is refused elsewhere: the approval
// is not at the final head, or the commit lies outside the window.
func (p *prover) rebased(ctx context.Context, pr forge.PullRequest, prCommits, outside []forge.Commit, atHead forge.File) (approval, error) {
	outsideWhy := func(c forge.Commit) approval {
		return pending("commit %s touched the action outside pull request #%d", text.ShortSHA(c.SHA), pr.Number)
	}
	if pr.MergedSHA == "" || len(prCommits) == 0 {
		return outsideWhy(outside[0]), nil
	}
	window := map[string]bool{}
	c, err := p.f.GetCommit(ctx, pr.MergedSHA)
	if err != nil {
		return approval{}, err
	}
	window[c.SHA] = true
	before, next, left := firstParent(c), firstParent(c), len(prCommits)-1
	if len(c.Parents) == 2 {
		// Rebased, then merged by a merge commit (the rebase-merge
		// style): the rebased commits are its second parent's line.
		next, left = c.Parents[1], len(prCommits)
	}
	for ; left > 0 && next != ""; left-- {
		if c, err = p.f.GetCommit(ctx, next); err != nil {
			return approval{}, err
		}
		window[c.SHA] = true
		before, next = firstParent(c), firstParent(c)
	}
	for _, c := range outside {
		if !window[c.SHA] {
			return outsideWhy(c), nil
		}
	}
	fork, ok := forkPoint(prCommits)
	if !ok {
		return pending("pull request #%d's commits do not start from one commit, so its rebase cannot be checked", pr.Number), nil
	}
	was, err := p.blobAt(ctx, atHead.Path, fork)
	if err != nil {
		return approval{}, err
	}
	then, err := p.blobAt(ctx, atHead.Path, before)
	if err != nil {
		return approval{}, err
	}
	if before == "" || was != then {
		return pending("the action was on the primary branch before pull request #%d's rebased commits, otherwise than where its branch started", pr.Number), nil
	}
	tip, err := p.blobAt(ctx, atHead.Path, pr.MergedSHA)
	if err != nil {
		return approval{}, err
	}
	if tip != atHead.SHA {
		return pending("the action at #%d's merge commit %s differs from its approved head %s", pr.Number, text.ShortSHA(pr.MergedSHA), text.ShortSHA(pr.HeadSHA)), nil
	}
	return approval{ok: true}, nil
}

// firstParent returns c's first parent, "" for a root commit.
func firstParent(c forge.Commit) string {
	if len(c.Parents) == 0 {
		return ""
	}
	return c.Parents[0]
}

// forkPoint returns the one commit outside cs that cs's commits grow
// from: where the pull request's branch started. ok is false when there
// is not exactly one (a branch that merged other history in).
func forkPoint(cs []forge.Commit) (string, bool) {
	in := make(map[string]bool, len(cs))
	for _, c := range cs {
		in[c.SHA] = true
	}
	fork := ""
	for _, c := range cs {
		for _, par := range c.Parents {
			if in[par] {
				continue
			}
			if fork != "" && fork != par {
				return "", false
			}
			fork = par
		}
	}
	return fork, fork != ""
}

// blobAt returns the blob id of path at ref, "" when the file is not
// there.
func (p *prover) blobAt(ctx context.Context, path, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	f, err := p.f.GetFile(ctx, path, ref)
	if errors.Is(err, forge.ErrNotFound) {
		return "", nil
	}
	return f.SHA, err
}
