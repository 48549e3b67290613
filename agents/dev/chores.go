package dev

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
	verdictpkg "github.com/disinto/disinto/lib/verdict"
)

// Chore pull requests are the ones the scheduled roles (gardener,
// planner, ...) open on chore/<role>-* branches: no issue of the dev
// agent's stands behind them, so nothing else merges them. The dev bot
// merges one when its author is the role's configured bot, the review bot
// approved its head, and CI is green on it; the merge is pinned to the
// approved head, so a push after the approval merges nothing.

// choreAttempts counts refused merges per pull request and head, so a
// merge the forge keeps refusing is tried a bounded number of times.
type choreAttempts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *choreAttempts) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *choreAttempts) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// choreRole returns the role whose chore branch head is, when p is that
// role's bot's own pull request.
func (a *Agent) choreRole(p forge.PullRequest) (string, bool) {
	if p.FromFork || p.State != forge.StateOpen {
		return "", false
	}
	for r, bot := range a.o.ChoreBots {
		if bot != "" && strings.HasPrefix(p.Head, "chore/"+r+"-") && strings.EqualFold(p.Author, bot) {
			return r, true
		}
	}
	return "", false
}

// mergeChores merges the approved, green chore pull requests of the
// tick's listing. It needs a review bot: without one nothing counts as an
// approval of a chore. Failures are logged; they never fail the tick.
func (a *Agent) mergeChores(ctx context.Context, snap *snapshot) {
	if a.o.ReviewBot == "" || len(a.o.ChoreBots) == 0 {
		return
	}
	for _, p := range snap.pulls {
		r, ok := a.choreRole(p)
		if !ok {
			continue
		}
		log := snap.log.With().Int64("pr", p.Number).Str("chore", r).Logger()
		if err := a.mergeChore(ctx, p); err != nil {
			log.Warn().Str("error", a.red.Error(err)).Msg("chore pull request not merged")
		}
	}
}

// errChoreRefused is the merge of a chore the forge refused too often.
var errChoreRefused = errors.New("the forge refused the merge; giving up on this head")

// mergeChore merges one chore pull request when it is ready.
func (a *Agent) mergeChore(ctx context.Context, p forge.PullRequest) error {
	key := p.HeadSHA
	if a.chores.get(key) >= a.lim.MergeAttempts {
		return nil // said once when it gave up
	}
	reviews, err := a.o.Forge.ListReviews(ctx, p.Number)
	if err != nil {
		return err
	}
	comments, err := a.o.Forge.ListComments(ctx, p.Number)
	if err != nil {
		return err
	}
	r, ok := verdictpkg.Read(comments, reviews, p.HeadSHA, a.o.ReviewBot)
	if !ok || !r.Verdict.Approved() {
		return nil
	}
	if a.o.CISystem != config.CINone {
		cs, err := a.o.Forge.CombinedStatus(ctx, p.HeadSHA)
		if err != nil {
			return err
		}
		if cs.State != forge.CISuccess {
			return nil
		}
	}
	err = a.o.Forge.Merge(ctx, p.Number, forge.MergeOptions{HeadSHA: p.HeadSHA, DeleteBranch: true})
	switch {
	case err == nil, errors.Is(err, forge.ErrAlreadyMerged):
		a.log.Info().Int64("pr", p.Number).Str("head", text.ShortSHA(p.HeadSHA)).Msg("chore pull request merged")
		return nil
	case errors.Is(err, forge.ErrHeadMoved):
		return nil // a new head waits for its own review
	case errors.Is(err, forge.ErrMergePending):
		return nil // the forge still checks; next tick
	case errors.Is(err, forge.ErrMergeBlocked), errors.Is(err, forge.ErrConflict):
		if a.chores.add(key) >= a.lim.MergeAttempts {
			return errChoreRefused
		}
		return nil
	}
	return err
}
