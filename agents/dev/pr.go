package dev

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
)

// codeForeignPull ends a run whose state points at a pull request the
// agent did not open.
const codeForeignPull ledger.Code = "pr.foreign"

// ours reports whether p is the agent's pull request for branch: opened by
// the agent (me), from the base repository, with branch as its head.
// Anyone can open a pull request whose head is called fix/issue-N, from a
// fork or, as a collaborator, from the agent's own branch; only identity
// tells them apart. A closed pull request whose branch was deleted no
// longer names its head, so the head is compared only while p is open.
func ours(p forge.PullRequest, me, branch string) bool {
	if me == "" || !strings.EqualFold(p.Author, me) || p.FromFork {
		return false
	}
	return p.State != forge.StateOpen || p.Head == branch
}

// ensurePR finds the agent's open pull request of the branch or opens it.
// A pull request someone else opened from the agent's own branch keeps the
// forge from opening a second one for the same branches: it is closed,
// with a comment saying why, and never reviewed or merged as the agent's.
func (a *Agent) ensurePR(ctx context.Context, st *State, summary string) error {
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	if st.PR > 0 {
		pr, err := a.o.Forge.GetPull(ctx, st.PR)
		if err == nil && pr.State == forge.StateOpen && ours(pr, me, st.Branch) {
			return nil
		}
		if err != nil && !errors.Is(err, forge.ErrNotFound) {
			return err
		}
		st.PR = 0
	}
	// find returns the agent's open pull request of the branch and the
	// others' open ones from the same branch of this repository.
	find := func() (own forge.PullRequest, found bool, squatters []forge.PullRequest, err error) {
		ps, err := a.o.Forge.ListPulls(ctx, forge.StateOpen)
		if err != nil {
			return forge.PullRequest{}, false, nil, err
		}
		for _, p := range ps {
			switch {
			case ours(p, me, st.Branch):
				own, found = p, true
			case p.Head == st.Branch && !p.FromFork && p.Base == a.o.PrimaryBranch:
				squatters = append(squatters, p)
			}
		}
		return own, found, squatters, nil
	}
	own, found, squatters, err := find()
	if err != nil {
		return err
	}
	if found {
		st.PR = own.Number
		return nil
	}
	for _, p := range squatters {
		if err := a.closeSquatter(ctx, st, p); err != nil {
			return err
		}
	}
	body := fmt.Sprintf("Fixes #%d\n\n## Changes\n\n%s\n\n%s", st.Issue,
		text.ClipTail(strings.TrimSpace(a.quote(summary)), 4000), forge.RefMarker(forge.RefDisintoIssue, fmt.Sprint(st.Issue)))
	if st.Origin != "" {
		// The pull request is made from the issue's text: what the review
		// derives from it (tech-debt findings) takes the issue's origin.
		body += "\n" + provenance.Marker(st.Origin, fmt.Sprintf("issue-%d", st.Issue))
	}
	// The level it is worked at, for the track record of each level.
	if m, err := (forge.Marker{Kind: forge.MarkerAutonomy, Fields: map[string]string{"level": string(a.level(*st))}}).String(); err == nil {
		body += "\n" + m
	}
	pr, err := a.o.Forge.CreatePull(ctx, forge.NewPull{
		Title: fmt.Sprintf("fix: %s (#%d)", st.Title, st.Issue), Body: body, Head: st.Branch, Base: a.o.PrimaryBranch,
	})
	if errors.Is(err, forge.ErrConflict) {
		// Opened by an earlier attempt that died before saving it.
		if got, ok, _, ferr := find(); ferr == nil && ok {
			st.PR = got.Number
			return nil
		}
	}
	if err != nil {
		return err
	}
	st.PR = pr.Number
	a.issueLog(*st).Info().Msg("pull request opened")
	return a.st.save(*st)
}

// closeSquatter closes p, another user's pull request from the agent's
// branch, saying why.
func (a *Agent) closeSquatter(ctx context.Context, st *State, p forge.PullRequest) error {
	body := fmt.Sprintf("This pull request was opened from `%s`, the branch the dev agent works on for #%d. "+
		"Only the agent's own pull request from that branch is reviewed and merged, and the forge allows one per branch, "+
		"so this one is closed. To propose changes, open a pull request from a branch of your own.\n%s",
		st.Branch, st.Issue, outcomeMarker(codeForeignPull))
	if _, err := a.o.Forge.CreateComment(ctx, p.Number, body); err != nil {
		return err
	}
	if err := a.o.Forge.ClosePull(ctx, p.Number); err != nil {
		return fmt.Errorf("close pull request #%d on %s: %w", p.Number, st.Branch, err)
	}
	a.issueLog(*st).Warn().Int64("squatter", p.Number).Str("author", p.Author).Msg("closed another user's pull request from the agent's branch")
	return nil
}
