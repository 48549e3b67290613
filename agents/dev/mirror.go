package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/text"
	"github.com/disinto/disinto/lib/vault"
)

// Mirror pushes go through the vault: the agent never holds a mirror's
// credential. After a merge it requests one low-tier mirror-push action
// per configured mirror (vault.MirrorAction: the mirror's name and the
// merged commit, idempotent by id), and the dispatcher pushes with the
// mirror's secret, recording the outcome exactly once in the ops
// repository, where status shows the pushes still pending. What stays
// here is only a request the vault did not take (the ops repository
// unreachable right after the merge): it is asked again on the next ticks
// with backoff (mirrorRetryMin doubling to mirrorRetryMax), kept in the
// data dir (Options.MirrorRequests) so that a restart asks again, and a
// newer merge replaces it, since pushing the newer commit carries the
// older one too.
const (
	mirrorRetryMin = time.Minute
	mirrorRetryMax = time.Hour
)

// MirrorVault files the vault actions of mirror pushes (vault.Requester,
// acting as the vault identity).
type MirrorVault interface {
	RequestAction(ctx context.Context, a vault.Action) (vault.Receipt, error)
}

var _ MirrorVault = (*vault.Requester)(nil)

// MirrorPush is one mirror push the vault has not taken yet.
type MirrorPush struct {
	// Mirror is the mirror's name in the project file.
	Mirror string
	// SHA is the merged commit to push as the primary branch.
	SHA string
	// Approval says a maintainer approves the push, as they approved a
	// merge it carries: a push goes at most at the autonomy level of the
	// work that produced its commits. It sticks until the push is filed,
	// whichever later merge replaces its commit.
	Approval bool
	// Queued is when the push was first asked for; Attempts how often
	// the request failed; Next when it is asked again; Error the last
	// failure.
	Queued   time.Time
	Attempts int
	Next     time.Time
	Error    string
}

// mirrorWork names the runtime's tracked work of the mirror requests.
const mirrorWork = "mirrors"

// queueMirrors asks the vault to push sha to every configured mirror,
// in the background of h; with approval, only once a maintainer approves
// the push in the vault (a medium-tier action), as the work that produced
// sha needed a maintainer's approval to merge.
func (a *Agent) queueMirrors(ctx context.Context, h runHandle, sha string, approval bool) {
	if sha == "" || len(a.o.Mirrors) == 0 {
		return
	}
	log := a.runLog(h)
	if a.o.MirrorVault == nil {
		log.Warn().Str("sha", text.ShortSHA(sha)).Msg("mirrors not pushed: mirror pushes go through the vault, and no vault identity is configured (FORGE_VAULT_TOKEN, FORGE_VAULT_PASS)")
		return
	}
	now := a.o.Now()
	a.mirrorMu.Lock()
	a.loadMirrorsLocked()
	for name := range a.o.Mirrors {
		prev, pending := a.unfiled[name]
		a.unfiled[name] = MirrorPush{Mirror: name, SHA: sha, Queued: now, Approval: approval || pending && prev.Approval}
	}
	a.saveMirrorsLocked()
	a.mirrorMu.Unlock()
	a.mirrorsDue(ctx, h)
}

// drainMirrors asks again for the requests that are due; with none it
// costs a lock.
func (a *Agent) drainMirrors(ctx context.Context, h runHandle) { a.mirrorsDue(ctx, h) }

// mirrorsDue starts the requests when any is due, as tracked background
// work of h, so that a slow ops repository never holds a tick up.
func (a *Agent) mirrorsDue(ctx context.Context, h runHandle) {
	now := a.o.Now()
	a.mirrorMu.Lock()
	a.loadMirrorsLocked()
	if a.mirrorLoadErr != nil && h != nil {
		log := h.Logger()
		log.Error().Err(a.mirrorLoadErr).Msg("mirror push requests of an earlier run lost")
		a.mirrorLoadErr = nil
	}
	due := false
	for _, p := range a.unfiled {
		due = due || !p.Next.After(now)
	}
	a.mirrorMu.Unlock()
	if due && h != nil {
		log := h.Logger()
		h.Go(ctx, mirrorWork, func(ctx context.Context) { a.requestMirrors(ctx, log) })
	}
}

// requestMirrors files the due requests. The requests run without the
// lock; their outcomes apply to the list as it is then, and one whose
// commit was replaced meanwhile changes nothing.
func (a *Agent) requestMirrors(ctx context.Context, l zerolog.Logger) {
	log := &l
	now := a.o.Now()
	var todo []MirrorPush
	a.mirrorMu.Lock()
	for _, p := range a.unfiled {
		if !p.Next.After(now) {
			todo = append(todo, p)
		}
	}
	a.mirrorMu.Unlock()
	sort.Slice(todo, func(i, j int) bool { return todo[i].Mirror < todo[j].Mirror })
	for _, p := range todo {
		url, ok := a.o.Mirrors[p.Mirror]
		if !ok {
			continue
		}
		act := MirrorAction(a.o.Repo, p.Mirror, url, p.SHA)
		if p.Approval {
			act.BlastRadius = max(act.BlastRadius, vault.TierMedium)
		}
		rc, err := a.o.MirrorVault.RequestAction(ctx, act)
		if ctx.Err() != nil {
			return // shutdown: the next merge asks again
		}
		if errors.Is(err, vault.ErrDuplicateID) {
			// Filed by an earlier attempt whose answer was lost, or run.
			err = nil
		}
		a.mirrorMu.Lock()
		cur, still := a.unfiled[p.Mirror]
		switch {
		case !still || cur.SHA != p.SHA:
		case err == nil:
			delete(a.unfiled, p.Mirror)
			log.Info().Str("mirror", p.Mirror).Str("sha", text.ShortSHA(p.SHA)).Str("action", act.ID).
				Str("tier", rc.Tier.String()).Int64("pr", rc.PR).Msg("mirror push requested from the vault")
		default:
			cur.Attempts++
			wait := min(mirrorRetryMin<<min(cur.Attempts-1, 6), mirrorRetryMax)
			cur.Next, cur.Error = now.Add(wait), a.red.Error(err)
			a.unfiled[p.Mirror] = cur
			log.Warn().Str("mirror", p.Mirror).Str("sha", text.ShortSHA(p.SHA)).Int("attempts", cur.Attempts).
				Time("next", cur.Next).Str("error", cur.Error).Msg("mirror push request failed; asked again later")
		}
		a.saveMirrorsLocked()
		a.mirrorMu.Unlock()
	}
}

// MirrorAction is the vault action the dev agent requests to push sha of
// repo to the mirror name at url: its credential, MIRROR_<NAME>_TOKEN,
// named for an http(s) URL, never held.
func MirrorAction(repo, name, url, sha string) vault.Action {
	secret := ""
	if config.MirrorNeedsSecret(url) {
		secret = config.MirrorSecretName(name)
	}
	return vault.MirrorAction(repo, name, sha, secret)
}

// runLog is the logger of h, the agent's without a run.
func (a *Agent) runLog(h runHandle) zerolog.Logger {
	if h == nil {
		return a.log
	}
	return h.Logger()
}

// PendingMirrors lists the mirror pushes the vault has not taken yet,
// for status; those it took are the vault's pending actions.
func (a *Agent) PendingMirrors() []MirrorPush {
	a.mirrorMu.Lock()
	defer a.mirrorMu.Unlock()
	a.loadMirrorsLocked()
	out := make([]MirrorPush, 0, len(a.unfiled))
	for _, p := range a.unfiled {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mirror < out[j].Mirror })
	return out
}

// loadMirrorsLocked reads the requests kept by an earlier process, once.
// A file that does not decode is moved aside (never overwritten) and
// said in the log of the next run (mirrorsDue).
func (a *Agent) loadMirrorsLocked() {
	if a.mirrorLoaded {
		return
	}
	a.mirrorLoaded = true
	if a.unfiled == nil {
		a.unfiled = map[string]MirrorPush{}
	}
	path := a.o.MirrorRequests
	if path == "" {
		return
	}
	var kept []MirrorPush
	err := atomicfile.ReadJSON(path, &kept)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		aside := path + ".unreadable"
		if rerr := os.Rename(path, aside); rerr != nil {
			err = errors.Join(err, rerr)
		}
		a.mirrorLoadErr = fmt.Errorf("mirror push requests not read, the file is kept as %s: %w", aside, err)
		return
	}
	for _, p := range kept {
		if _, ok := a.o.Mirrors[p.Mirror]; ok && p.SHA != "" {
			a.unfiled[p.Mirror] = p
		}
	}
}

// saveMirrorsLocked keeps the requests for a restart.
func (a *Agent) saveMirrorsLocked() {
	if a.o.MirrorRequests == "" {
		return
	}
	list := make([]MirrorPush, 0, len(a.unfiled))
	for _, p := range a.unfiled {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Mirror < list[j].Mirror })
	if err := atomicfile.WriteState(a.o.MirrorRequests, list); err != nil {
		a.log.Warn().Err(err).Msg("mirror push requests not saved; kept in memory")
	}
}
