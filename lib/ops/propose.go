package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/wait"
)

// Proposal is a change to the ops repository proposed as a pull request:
// one commit on Branch, on top of the primary branch, and a pull request
// from Branch into it.
type Proposal struct {
	Branch  string
	Title   string
	Body    string
	Message string
	Changes []git.FileChange
}

// PullRequests is what Propose needs of the ops repository's forge
// (*forge.RepoClient, acting as the checkout's own bot).
type PullRequests interface {
	FindPullByHead(ctx context.Context, branch string) (forge.PullRequest, error)
	CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	ClosePull(ctx context.Context, n int64) error
}

var _ PullRequests = (*forge.RepoClient)(nil)

// ErrForeignPull means a pull request with the proposal's head branch
// exists but comes from a fork: its name proves nothing, and Propose does
// not adopt it.
var ErrForeignPull = errors.New("a pull request from a fork uses the branch name")

// Propose opens the pull request p describes and returns it. It is
// idempotent by branch: when a pull request from p.Branch of this
// repository exists, in any state, it is returned and nothing is pushed;
// when only the branch exists (a run that stopped before opening the
// pull request), the pull request is opened from it as it is.
//
// Two proposers racing on one branch end with one open pull request. The
// push decides who opens it: the other's push is refused, and it waits a
// little for the winner's pull request. Should both open one anyway (the
// winner died between push and pull request, or the forge let two
// through, which it does), each keeps the lowest-numbered and closes the
// others it sees.
func (r *Repo) Propose(ctx context.Context, prs PullRequests, p Proposal) (forge.PullRequest, error) {
	if p.Branch == "" || p.Branch == r.o.Branch {
		return forge.PullRequest{}, fmt.Errorf("propose %q: the branch must be a new one, not %q", p.Title, r.o.Branch)
	}
	if pr, ok, err := r.existingPull(ctx, prs, p.Branch); err != nil || ok {
		return pr, err
	}
	pushed, err := r.pushBranch(ctx, p)
	if err != nil {
		return forge.PullRequest{}, err
	}
	if !pushed {
		for attempt := 1; attempt <= proposeWaits; attempt++ {
			if err := wait.For(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return forge.PullRequest{}, err
			}
			if pr, ok, err := r.existingPull(ctx, prs, p.Branch); err != nil || ok {
				return pr, err
			}
		}
	}
	pr, err := prs.CreatePull(ctx, forge.NewPull{Title: p.Title, Body: p.Body, Head: p.Branch, Base: r.o.Branch})
	if err != nil {
		// Another proposer opened it between our look and our create.
		if pr, ok, ferr := r.existingPull(ctx, prs, p.Branch); ferr == nil && ok {
			return pr, nil
		}
		return forge.PullRequest{}, fmt.Errorf("propose %q: %w", p.Title, err)
	}
	r.o.Log.Debug().Int64("pr", pr.Number).Str("branch", p.Branch).Msg("ops pull request opened")
	return r.dedupe(ctx, prs, pr)
}

// proposeWaits bounds the looks for the pull request of the proposer
// whose push won.
const proposeWaits = 6

// dedupe keeps the lowest-numbered open pull request from mine's branch
// of this repository and closes the others.
func (r *Repo) dedupe(ctx context.Context, prs PullRequests, mine forge.PullRequest) (forge.PullRequest, error) {
	open, err := prs.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return forge.PullRequest{}, fmt.Errorf("propose on %s: %w", mine.Head, err)
	}
	keep := mine
	var dups []forge.PullRequest
	for _, pr := range open {
		if pr.Head != mine.Head || pr.FromFork || pr.Base != r.o.Branch {
			continue
		}
		if pr.Number < keep.Number {
			dups, keep = append(dups, keep), pr
		} else if pr.Number > keep.Number {
			dups = append(dups, pr)
		}
	}
	for _, d := range dups {
		if err := prs.ClosePull(ctx, d.Number); err != nil {
			return forge.PullRequest{}, fmt.Errorf("propose on %s: close the duplicate #%d: %w", mine.Head, d.Number, err)
		}
	}
	return keep, nil
}

// existingPull returns the pull request from branch of this repository.
func (r *Repo) existingPull(ctx context.Context, prs PullRequests, branch string) (forge.PullRequest, bool, error) {
	pr, err := prs.FindPullByHead(ctx, branch)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		return forge.PullRequest{}, false, nil
	case err != nil:
		return forge.PullRequest{}, false, fmt.Errorf("propose on %s: %w", branch, err)
	case pr.FromFork:
		return forge.PullRequest{}, false, fmt.Errorf("propose on %s: #%d: %w", branch, pr.Number, ErrForeignPull)
	}
	return pr, true, nil
}

// pushBranch creates p.Branch with one commit of p.Changes on top of the
// primary branch, unless the branch exists already; pushed reports that
// this call created it.
func (r *Repo) pushBranch(ctx context.Context, p Proposal) (pushed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, err := r.sync(ctx)
	if err != nil {
		return false, err
	}
	if _, err := repo.RemoteSHA(ctx, p.Branch); err == nil {
		return false, nil
	} else if !errors.Is(err, git.ErrNotFound) {
		return false, fmt.Errorf("propose on %s: %w", p.Branch, err)
	}
	head, err := repo.RefSHA(ctx, r.ref())
	if err != nil {
		return false, err
	}
	if head == "" {
		return false, fmt.Errorf("propose on %s: the ops repository has no %s yet", p.Branch, r.o.Branch)
	}
	sha, err := repo.CommitFiles(ctx, r.ref(), p.Message, p.Changes)
	if err != nil {
		return false, err
	}
	if sha == head {
		return false, fmt.Errorf("propose on %s: the change is already on %s", p.Branch, r.o.Branch)
	}
	err = repo.Push(ctx, repo.Dir(), p.Branch, git.PushOptions{Source: sha})
	switch {
	case errors.Is(err, git.ErrRejected):
		return false, nil // another proposer pushed the branch first; use theirs
	case err != nil:
		return false, fmt.Errorf("propose on %s: %w", p.Branch, err)
	}
	return true, nil
}
