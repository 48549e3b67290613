package vault

import (
	"context"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/wait"
)

// A low-tier action runs without a human when the vault bot committed it
// directly. Who committed is not what a commit says: its author and
// committer e-mail are text any writer of the ops repository can set to
// the vault identity's. What cannot be forged is the forge's record of the
// push, which names the account whose credentials made it. Gitea and
// Forgejo write one for every push (an activity of type commit_repo,
// carrying the pusher's id, the branch and the commits the push brought)
// and serve the pusher's own list on /users/{login}/activities/feeds with
// only-performed-by. So a direct action counts only when every commit
// that touched it on the primary branch was brought by a push of the vault
// bot's, the account the dispatcher itself acts as, to that branch.
//
// The rule relies on what a push to an existing branch lists: only the
// commits that were not on the branch before (a push that creates the
// branch lists older ones too, but the primary branch is the ops
// repository's default one, which the forge never lets anyone delete and
// so never sees created again). Another writer's commit stays in that
// writer's push, whatever the vault bot pushes on top of it. The forge
// lists at most a few commits of one push; the vault bot pushes one
// commit at a time, and a commit the record does not list simply does not
// count. A record that is missing (kept private, pruned by the forge's
// cleanup, not yet written) makes the action wait, never run.

// Bounds of the push record lookup. The forge writes the record from a
// queue, moments after it accepted the push, so one check waits a little
// for it; the wait is shared by every action of one check, so actions
// whose records never come cost one wait per cycle, not one each.
const (
	pushRecordWait = 15 * time.Second
	pushRecordPoll = 250 * time.Millisecond
	// pushPages bounds the pages of the vault bot's activity read at a
	// time; actions are dispatched within minutes of their push, so
	// theirs are among the newest.
	pushPages = 10
)

// pushLog is what the forge records of the vault bot's pushes to the
// primary branch, read once per check and again while waiting.
type pushLog struct {
	me     forge.User
	pushed map[string]bool
	until  time.Time
}

// notPushed returns the first commit of cs that no push of the vault bot
// to primary brought, "" when every one was; f acts as the vault bot.
func (l *pushLog) notPushed(ctx context.Context, f provenanceForge, primary string, cs []forge.Commit) (string, error) {
	if l.pushed == nil {
		me, err := f.Me(ctx)
		if err != nil {
			return "", err
		}
		l.me, l.pushed = me, map[string]bool{}
	}
	for {
		stray := l.stray(cs)
		if stray == "" {
			return "", nil
		}
		if err := l.read(ctx, f, primary, cs); err != nil {
			return "", err
		}
		if stray = l.stray(cs); stray == "" {
			return "", nil
		}
		if l.until.IsZero() {
			l.until = time.Now().Add(pushRecordWait)
		}
		if !time.Now().Before(l.until) {
			return stray, nil
		}
		if err := wait.For(ctx, pushRecordPoll); err != nil {
			return "", err
		}
	}
}

// stray returns the first commit of cs not known to be the vault bot's.
func (l *pushLog) stray(cs []forge.Commit) string {
	for _, c := range cs {
		if !l.pushed[c.SHA] {
			return c.SHA
		}
	}
	return ""
}

// read reads the vault bot's newest pushes to primary, page by page,
// until every commit of cs is known or the pages end.
func (l *pushLog) read(ctx context.Context, f provenanceForge, primary string, cs []forge.Commit) error {
	for page := 1; page <= pushPages; page++ {
		ps, more, err := f.PushesBy(ctx, l.me.Login, page)
		if err != nil {
			return err
		}
		for _, p := range ps {
			// The feed is the vault bot's own; the ids are checked all the
			// same, as the record's word is what counts.
			if p.PusherID != l.me.ID || l.me.ID == 0 || p.Branch != primary {
				continue
			}
			for _, sha := range p.Commits {
				l.pushed[sha] = true
			}
		}
		if l.stray(cs) == "" || !more {
			return nil
		}
	}
	return nil
}
