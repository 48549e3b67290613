// Package filer is the sprint filer (spec 50 §6): a reconciliation step
// that turns merged sprints into issues and closes the vision issues whose
// sub-issues are all closed.
//
// Each pass
//  1. reads every issue of the project once and indexes the filer's own
//     decomposed-from markers (the forge is the filer's only memory; only
//     issues the filer bot wrote count, since anyone can type a marker);
//  2. for every merged sprint pull request of the ops repository that has
//     no outcome comment of the filer yet, reads the sprint files the pull
//     request touched at its merge commit, validates all of them
//     (lib/sprint), files the sub-issues no marker shows yet in dependency
//     order (each body with a "## Depends on" list of the issue numbers of
//     its prerequisites, which the dev agent's gate reads), labels the
//     vision in-progress and comments the mapping on the pull request; a
//     sprint that cannot be filed is refused once, by a comment saying why;
//  3. closes every open vision issue whose sub-issues (matched by exact
//     vision number) are all closed, with one "## Vision Issue Completed"
//     comment, removing in-progress.
//
// Every step is idempotent, so a pass killed at any point is finished by
// the next: issues filed before the kill are found by their markers and
// not filed again.
package filer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
)

// ProjectForge is what the filer does on the project repository, as the
// filer bot: read every issue, file sub-issues, label, comment on and
// close vision issues.
type ProjectForge interface {
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	CloseIssue(ctx context.Context, n int64) error
}

// OpsForge is what the filer reads of the ops repository, as the filer
// bot (read access): its merged pull requests, their diffs and files at
// the merge commit; and where it records what it filed.
type OpsForge interface {
	Get(ctx context.Context) (forge.Repo, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	PullDiff(ctx context.Context, n int64) (string, error)
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
}

var (
	_ ProjectForge = (*forge.RepoClient)(nil)
	_ OpsForge     = (*forge.RepoClient)(nil)
)

// Options configures an Agent.
type Options struct {
	// Project is the project's name, for logs and the ledger.
	Project string
	// Repo is the project repository's owner/name, for references in
	// comments on the ops repository.
	Repo string
	// Bot is the filer bot's login: the author of every issue and comment
	// the filer trusts as its own.
	Bot string
	// Forge acts as the filer bot on the project repository, Ops on the
	// ops repository.
	Forge ProjectForge
	Ops   OpsForge
	// Now is the clock of the completion comment (default time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

// Agent is the filer of one project. Its Tick is one reconciliation pass.
type Agent struct {
	o Options
}

// ErrNoIdentity is returned by New without a filer bot of its own.
var ErrNoIdentity = errors.New("the filer needs an identity of its own")

// New returns the filer of one project.
func New(o Options) (*Agent, error) {
	switch {
	case o.Bot == "":
		return nil, fmt.Errorf("filer of %s: %w: no bot login", o.Project, ErrNoIdentity)
	case o.Forge == nil || o.Ops == nil:
		return nil, fmt.Errorf("filer of %s: a project and an ops repository are required", o.Project)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Agent{o: o}, nil
}

// Tick implements agent.Agent: one pass over the merged sprints and the
// open vision issues. It returns an error when the pass could not finish;
// what it did before is kept, and the next pass goes on from there.
//
// A tick an event woke (any event of the ops repository) only files: it
// reads the project's issues only when a sprint needs filing, so the ops
// repository's frequent events stay cheap. Scheduled and manual ticks
// also close completed visions.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	log := run.Logger()
	issues := &lazyIndex{load: a.index}
	if err := a.fileSprints(ctx, run, issues, log); err != nil {
		return err
	}
	if run.Cause == agent.CauseEvent {
		return nil
	}
	idx, err := issues.get(ctx)
	if err != nil {
		return err
	}
	return a.closeVisions(ctx, run, idx, log)
}
