package dev

import (
	"context"
	"fmt"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
)

// pullsView is the project's listing of open pull requests shared with the
// other roles of the project (lanes, the review agent). A reused listing
// is at most a bounded time old; the agent's own changes to pull requests
// invalidate it. *forgeview.Reader, one role's access to the shared
// view, implements it.
type pullsView interface {
	// OpenPulls returns the open pull requests; reuse allows a listing
	// read recently instead of a request.
	OpenPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error)
	// Invalidate makes the next OpenPulls read the forge.
	Invalidate()
}

var _ pullsView = (*forgeview.Reader)(nil)

// openPulls lists the open pull requests for a tick: through the shared
// view when there is one (a scheduled tick may reuse its listing; a tick
// an event caused reads afresh), else from the forge.
func (a *Agent) openPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error) {
	var ps []forge.PullRequest
	var err error
	if a.o.Pulls != nil {
		ps, err = a.o.Pulls.OpenPulls(ctx, reuse)
	} else {
		ps, err = a.o.Forge.ListPulls(ctx, forge.StateOpen)
	}
	if err != nil {
		return nil, fmt.Errorf("list open pulls: %w", err)
	}
	return ps, nil
}

// viewedForge invalidates the shared listing after every forge write of
// the agent that may change a pull request: opening, closing, merging,
// labelling.
type viewedForge struct {
	forgeAPI
	v pullsView
}

func (f viewedForge) CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error) {
	defer f.v.Invalidate()
	return f.forgeAPI.CreatePull(ctx, in)
}

func (f viewedForge) ClosePull(ctx context.Context, n int64) error {
	defer f.v.Invalidate()
	return f.forgeAPI.ClosePull(ctx, n)
}

func (f viewedForge) Merge(ctx context.Context, n int64, opts forge.MergeOptions) error {
	defer f.v.Invalidate()
	return f.forgeAPI.Merge(ctx, n, opts)
}

func (f viewedForge) AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error {
	defer f.v.Invalidate()
	return f.forgeAPI.AddLabels(ctx, n, names...)
}

func (f viewedForge) RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error {
	defer f.v.Invalidate()
	return f.forgeAPI.RemoveLabels(ctx, n, names...)
}

// viewedGit invalidates the shared listing after every push of the
// agent: a pushed branch may be a pull request's head.
type viewedGit struct {
	gitOps
	v pullsView
}

func (g viewedGit) Push(ctx context.Context, sha, branch string) error {
	defer g.v.Invalidate()
	return g.gitOps.Push(ctx, sha, branch)
}

func (g viewedGit) Rebase(ctx context.Context, branch string) (string, error) {
	defer g.v.Invalidate()
	return g.gitOps.Rebase(ctx, branch)
}

func (g viewedGit) EmptyCommit(ctx context.Context, branch, msg string) (string, error) {
	defer g.v.Invalidate()
	return g.gitOps.EmptyCommit(ctx, branch, msg)
}
