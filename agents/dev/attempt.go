package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// A fresh attempt at an issue whose earlier pull request was abandoned
// (closed without merging) works on a new branch, fix/issue-N-k, so that
// neither the forge nor a reader mixes the two, and it starts from the
// first prompt, with the abandoned work shown as prior art.

// attemptOfBranch returns k of fix/issue-N-k, 1 for fix/issue-N, and 0 for
// a name that is neither.
func attemptOfBranch(head string) int {
	if issueOfBranch(head) == 0 {
		return 0
	}
	rest := strings.TrimPrefix(head, "fix/issue-")
	_, suffix, ok := strings.Cut(rest, "-")
	if !ok {
		return 1
	}
	k, err := strconv.Atoi(suffix)
	if err != nil || k < 2 {
		return 0
	}
	return k
}

// ownPullOf returns the agent's newest open pull request of issue n,
// whatever attempt's branch it is on.
func (s *snapshot) ownPullOf(n int64) (forge.PullRequest, bool) {
	var best forge.PullRequest
	found := false
	for head, p := range s.own {
		if issueOfBranch(head) == n && (!found || p.Number > best.Number) {
			best, found = p, true
		}
	}
	return best, found
}

// ownOfIssue reports whether p is one of the agent's (me) pull requests of
// issue n, in any state: opened by the agent from the base repository and
// either on a branch of n or carrying the agent's issue reference (a
// closed pull request whose branch was deleted may name no head).
func ownOfIssue(p forge.PullRequest, me string, n int64) bool {
	if me == "" || !strings.EqualFold(p.Author, me) || p.FromFork {
		return false
	}
	if issueOfBranch(p.Head) == n {
		return true
	}
	for _, v := range p.RefMarkersBy(forge.RefDisintoIssue, me) {
		if v == strconv.FormatInt(n, 10) {
			return true
		}
	}
	return false
}

// abandoned reports whether the run that ended in old left a pull request
// that was closed without merging; its workspace, which holds that
// attempt's checkout, is removed then, so the fresh attempt gets a
// checkout of its own branch.
func (a *Agent) abandoned(ctx context.Context, old State) (bool, error) {
	if old.PR <= 0 {
		return false, nil
	}
	pr, err := a.o.Forge.GetPull(ctx, old.PR)
	if errors.Is(err, forge.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if pr.State == forge.StateOpen || pr.Merged {
		return false, nil
	}
	a.issueLog(old).Info().Msg("the earlier pull request was closed unmerged; starting a fresh attempt")
	a.removeWorkspace(ctx, &old)
	return true, nil
}

// chooseBranch picks the branch of a run's first session before its
// checkout is made: the branch of the agent's open pull request of the
// issue if there is one, else fix/issue-N when the agent never opened a
// pull request for the issue, else the next attempt's fix/issue-N-k (k
// above every attempt's branch on the forge and every pull request of
// the issue). A run whose checkout exists keeps its branch: the checkout
// may hold commits on it. The closed pull requests it lists are kept for
// the first prompt's prior art.
func (a *Agent) chooseBranch(ctx context.Context, st *State, checkout string) error {
	if st.Stage != StageImplementing || st.SessionID != "" || st.PR != 0 {
		return nil
	}
	if _, err := os.Lstat(checkout); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	open, err := a.o.Forge.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return fmt.Errorf("list open pulls: %w", err)
	}
	closed, err := a.closedPulls(ctx)
	if err != nil {
		return err
	}
	st.closed, st.closedListed = closed, true
	var newestOpen forge.PullRequest
	used, top := 0, 0
	for _, p := range append(open, closed...) {
		if !ownOfIssue(p, me, st.Issue) {
			continue
		}
		used++
		top = max(top, attemptOfBranch(p.Head))
		if p.State == forge.StateOpen && issueOfBranch(p.Head) == st.Issue && p.Number > newestOpen.Number {
			newestOpen = p
		}
	}
	branch := branchFor(st.Issue, 1)
	switch {
	case newestOpen.Number > 0:
		branch = newestOpen.Head
	case used > 0:
		heads, err := a.o.Git.RemoteBranches(ctx, branchFor(st.Issue, 1))
		if err != nil {
			return err
		}
		for h := range heads {
			if issueOfBranch(h) == st.Issue {
				top = max(top, attemptOfBranch(h))
			}
		}
		branch = branchFor(st.Issue, max(top, used)+1)
	}
	if branch != st.Branch {
		a.issueLog(*st).Info().Str("branch", branch).Msg("working on a fresh branch: an earlier attempt's pull request was closed")
		st.Branch = branch
		if err := a.st.save(*st); err != nil {
			return err
		}
	}
	return nil
}

// closedPulls returns the closed pull requests of the repository, newest
// first, listed once per run (the first prompt needs them too). A listing
// cut at the forge package's page cap is used as far as it goes.
func (a *Agent) closedPulls(ctx context.Context) ([]forge.PullRequest, error) {
	ps, err := a.o.Forge.ListPulls(ctx, forge.StateClosed)
	if err != nil && !(errors.Is(err, forge.ErrPageCap) && len(ps) > 0) {
		return nil, fmt.Errorf("list closed pulls: %w", err)
	}
	return ps, nil
}
