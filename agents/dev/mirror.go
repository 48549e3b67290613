package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/text"
)

// Mirror pushes go through a durable queue: a merge enqueues the merged
// commit for every mirror, and each tick pushes what is due. A push that
// fails is retried with backoff (mirrorRetryMin doubling to
// mirrorRetryMax) and stays listed in status until it succeeds; a newer
// merge replaces an older commit still queued for the same mirror, since
// pushing the newer one carries the older one too.
const (
	mirrorRetryMin = time.Minute
	mirrorRetryMax = time.Hour
)

// MirrorPush is one queued push of the primary branch to a mirror.
type MirrorPush struct {
	// Mirror is the mirror's name in the project file.
	Mirror string `json:"mirror"`
	// SHA is the merged commit pushed as the primary branch.
	SHA string `json:"sha"`
	// Queued is when the push was first queued; Attempts how often it
	// failed; Next when it is tried again; Error the last failure.
	Queued   time.Time `json:"queued"`
	Attempts int       `json:"attempts,omitempty"`
	Next     time.Time `json:"next,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// mirrorFile holds the queue, next to the issues' states.
func (a *Agent) mirrorFile() string { return filepath.Join(a.st.root, "mirrors.json") }

// loadMirrors reads the queue; a missing file is an empty queue.
func (a *Agent) loadMirrors() ([]MirrorPush, error) {
	data, err := os.ReadFile(a.mirrorFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read mirror queue: %w", err)
	}
	var q []MirrorPush
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, fmt.Errorf("parse mirror queue %s: %w", a.mirrorFile(), err)
	}
	return q, nil
}

func (a *Agent) saveMirrors(q []MirrorPush) error {
	if len(q) == 0 {
		if err := os.Remove(a.mirrorFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear mirror queue: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(a.st.root, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	data, err := json.MarshalIndent(q, "", "  ")
	if err != nil {
		return fmt.Errorf("encode mirror queue: %w", err)
	}
	return writeAtomic(a.mirrorFile(), data)
}

// queueMirrors queues sha for every configured mirror, replacing an
// older commit queued for the same one, and starts pushing on h.
func (a *Agent) queueMirrors(ctx context.Context, h runHandle, sha string) {
	if sha == "" || len(a.o.Mirrors) == 0 {
		return
	}
	log := a.runLog(h)
	a.mirrorMu.Lock()
	defer a.mirrorMu.Unlock()
	q, err := a.loadMirrors()
	if err != nil {
		log.Error().Str("error", a.red.Error(err)).Msg("mirror queue unreadable; starting it over")
		q = nil
	}
	byName := map[string]int{}
	for i, p := range q {
		byName[p.Mirror] = i
	}
	now := a.o.Now()
	for name := range a.o.Mirrors {
		push := MirrorPush{Mirror: name, SHA: sha, Queued: now}
		if i, ok := byName[name]; ok {
			q[i] = push
		} else {
			q = append(q, push)
		}
	}
	sort.Slice(q, func(i, j int) bool { return q[i].Mirror < q[j].Mirror })
	if err := a.saveMirrors(q); err != nil {
		log.Error().Str("error", a.red.Error(err)).Msg("save mirror queue")
		return
	}
	a.mirrorsDue(ctx, h, q)
}

// drainMirrors starts pushing the queued commits that are due, as
// tracked background work of h, so that a slow mirror never holds a tick
// up. With nothing due it costs a file read.
func (a *Agent) drainMirrors(ctx context.Context, h runHandle) {
	a.mirrorMu.Lock()
	q, err := a.loadMirrors()
	a.mirrorMu.Unlock()
	if err != nil {
		log := a.runLog(h)
		log.Error().Str("error", a.red.Error(err)).Msg("mirror queue unreadable")
		return
	}
	a.mirrorsDue(ctx, h, q)
}

// mirrorsDue starts the pushes when any of q is due.
func (a *Agent) mirrorsDue(ctx context.Context, h runHandle, q []MirrorPush) {
	now := a.o.Now()
	for _, p := range q {
		if !p.Next.After(now) {
			if h != nil {
				log := h.Logger()
				h.Go(ctx, mirrorWork, func(ctx context.Context) { a.pushMirrors(ctx, log) })
			}
			return
		}
	}
}

// mirrorWork names the runtime's tracked work of the mirror pushes.
const mirrorWork = "mirrors"

// pushMirrors pushes what is due in the queue. The pushes run without
// the queue's lock, so that a merge queueing a newer commit meanwhile
// never waits for a slow mirror; the outcomes are applied to the queue as
// it is then, and a push whose commit was replaced meanwhile changes
// nothing.
func (a *Agent) pushMirrors(ctx context.Context, l zerolog.Logger) {
	log := &l
	a.mirrorMu.Lock()
	q, err := a.loadMirrors()
	a.mirrorMu.Unlock()
	if err != nil {
		log.Error().Str("error", a.red.Error(err)).Msg("mirror queue unreadable")
		return
	}
	now := a.o.Now()
	done := map[MirrorPush]error{}
	for _, p := range q {
		url, ok := a.o.Mirrors[p.Mirror]
		if !ok || p.Next.After(now) {
			continue
		}
		err := a.o.Git.PushMirror(ctx, p.Mirror, url, p.SHA)
		if ctx.Err() != nil {
			break // shutdown: tried again after the restart
		}
		done[MirrorPush{Mirror: p.Mirror, SHA: p.SHA}] = err
	}
	a.mirrorMu.Lock()
	defer a.mirrorMu.Unlock()
	if q, err = a.loadMirrors(); err != nil {
		log.Error().Str("error", a.red.Error(err)).Msg("mirror queue unreadable")
		return
	}
	left := q[:0]
	for _, p := range q {
		if _, ok := a.o.Mirrors[p.Mirror]; !ok {
			log.Warn().Str("mirror", p.Mirror).Msg("mirror no longer configured; its queued push is dropped")
			continue
		}
		err, tried := done[MirrorPush{Mirror: p.Mirror, SHA: p.SHA}]
		switch {
		case !tried:
		case err == nil:
			log.Info().Str("mirror", p.Mirror).Str("sha", text.ShortSHA(p.SHA)).Int("attempts", p.Attempts+1).Msg("mirror pushed")
			continue
		default:
			p.Attempts++
			wait := min(mirrorRetryMin<<min(p.Attempts-1, 6), mirrorRetryMax)
			p.Next, p.Error = now.Add(wait), a.red.Error(err)
			log.Warn().Str("mirror", p.Mirror).Str("sha", text.ShortSHA(p.SHA)).Int("attempts", p.Attempts).
				Time("next", p.Next).Str("error", p.Error).Msg("mirror push failed; retried later")
		}
		left = append(left, p)
	}
	if err := a.saveMirrors(left); err != nil {
		log.Error().Str("error", a.red.Error(err)).Msg("save mirror queue")
	}
}

// runLog is the logger of h, the agent's without a run.
func (a *Agent) runLog(h runHandle) zerolog.Logger {
	if h == nil {
		return a.log
	}
	return h.Logger()
}

// PendingMirrors lists the mirror pushes not done yet, for status.
func (a *Agent) PendingMirrors() []MirrorPush {
	a.mirrorMu.Lock()
	defer a.mirrorMu.Unlock()
	q, _ := a.loadMirrors()
	return q
}
