package dev

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/patch"
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
		if err := a.mergeChore(ctx, log, p, r); err != nil {
			log.Warn().Str("error", a.red.Error(err)).Msg("chore pull request not merged")
		}
	}
}

// errChoreRefused is the merge of a chore the forge refused too often.
var errChoreRefused = errors.New("the forge refused the merge; giving up on this head")

// mergeChore merges one chore pull request of role when it is ready:
// approved by the review bot and green, and, when the role's autonomy
// level or a protected path wants one, approved by a maintainer too
// (never at level advisory).
func (a *Agent) mergeChore(ctx context.Context, log zerolog.Logger, p forge.PullRequest, role string) error {
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
	if wait, err := a.choreWaits(ctx, p, role, reviews, comments); err != nil || wait {
		return err
	}
	err = a.o.Forge.Merge(ctx, p.Number, forge.MergeOptions{HeadSHA: p.HeadSHA, DeleteBranch: true})
	switch {
	case err == nil, errors.Is(err, forge.ErrAlreadyMerged):
		log.Info().Str("head", text.ShortSHA(p.HeadSHA)).Msg("chore pull request merged")
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

// choreWaits reports whether chore pull request p of role waits for a
// maintainer, saying so on it in one comment: at the role's level
// advisory always, at approve or when it changes a protected path until
// a maintainer approved its head.
func (a *Agent) choreWaits(ctx context.Context, p forge.PullRequest, role string, reviews []forge.Review, comments []forge.Comment) (bool, error) {
	lvl := a.o.Autonomy.RoleLevel(config.Role(role))
	diff, err := a.o.Forge.PullDiff(ctx, p.Number)
	if err != nil {
		return false, err
	}
	files := a.protectedFiles(patch.Files(diff))
	if lvl.Merges() && !lvl.NeedsMaintainer() && len(files) == 0 {
		return false, nil
	}
	var body string
	if !lvl.Merges() {
		body = fmt.Sprintf("### Ready for a maintainer to merge\n\n%sThe %s's autonomy level is `advisory`: the dev agent never merges its pull requests. "+
			"CI is green on %s and the review approved it; merge it, or close it.\n", a.mentions(), role, p.HeadSHA)
	} else {
		who, err := a.approvedBy(ctx, p.HeadSHA, reviews, comments)
		if err != nil || who != "" {
			return false, err
		}
		var why []string
		if lvl.NeedsMaintainer() {
			why = append(why, fmt.Sprintf("the %s's autonomy level is `%s`", role, lvl))
		}
		if len(files) > 0 {
			why = append(why, "it changes protected paths: "+quotedPaths(a, files))
		}
		body = fmt.Sprintf("### Waiting for a maintainer's approval\n\n%sCI is green on %s and the review approved it, but %s, "+
			"so it is merged only once a maintainer approves this head: a formal approval of the pull request at it, "+
			"or a comment with the line\n\n    %s %s\n", a.mentions(), p.HeadSHA, strings.Join(why, ", and "), approveCommand, p.HeadSHA)
	}
	return true, a.choreNote(ctx, p, comments, body)
}

// choreNote keeps body as the one waiting note of chore pull request p,
// found among its comments by marker and author.
func (a *Agent) choreNote(ctx context.Context, p forge.PullRequest, comments []forge.Comment, body string) error {
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	m, err := forge.Marker{Kind: markerWait, Fields: map[string]string{"pr": fmt.Sprint(p.Number), "kind": "chore"}}.String()
	if err != nil {
		return err
	}
	body = strings.TrimRight(body, "\n") + "\n" + m
	for _, c := range comments {
		if mk, ok := c.MarkerBy(markerWait, me); ok && mk.Fields["pr"] == fmt.Sprint(p.Number) {
			if c.Body == body {
				return nil
			}
			_, err := a.o.Forge.EditComment(ctx, c.ID, body)
			return err
		}
	}
	_, err = a.o.Forge.CreateComment(ctx, p.Number, body)
	return err
}
