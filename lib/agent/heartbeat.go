package agent

import (
	"context"
	"sort"
	"time"

	"github.com/disinto/disinto/lib/claude"
)

// DefaultStallAfter is how long running work may make no progress before
// its heartbeat calls it stalled (the supervisor's "agent stalled" rule).
const DefaultStallAfter = 30 * time.Minute

// Heartbeat is what the runtime knows of one tick or piece of background
// work while it runs: when it last made progress, and the process group
// and deadline of the claude session it runs, if any. The runtime keeps
// one per running tick and per Run.Go work, from its start to its end;
// the claude runner's stream events (a session that prints is alive) and
// the agent's own steps (Step) move LastProgressAt.
type Heartbeat struct {
	Project string `json:"project"`
	Role    string `json:"role"`
	// Key is the work's key ("issue-42"), or "tick" for a tick.
	Key string `json:"key"`
	// Run is the id of the tick that runs it or started it.
	Run            string    `json:"run"`
	StartedAt      time.Time `json:"started_at"`
	LastProgressAt time.Time `json:"last_progress_at"`
	// Step is what made the last progress: "tick" or "work" at the start,
	// a step the agent named, or "claude <event type>".
	Step string `json:"step"`
	// PGID is the process group of the claude session running now; 0
	// while none runs.
	PGID int `json:"pgid,omitempty"`
	// Deadline is when the runner kills that session; zero while none
	// runs.
	Deadline time.Time `json:"deadline,omitzero"`
	// Sessions counts the sessions the work started, Events the stream
	// events they printed.
	Sessions int   `json:"sessions,omitempty"`
	Events   int64 `json:"events,omitempty"`
	// Stalled is set when nothing made progress for the runtime's
	// StallAfter.
	Stalled bool `json:"stalled"`
}

// Silent returns how long the work has made no progress at now.
func (h Heartbeat) Silent(now time.Time) time.Duration { return now.Sub(h.LastProgressAt) }

// Overdue reports whether the session running at now is past its
// deadline: one the runner should already have killed.
func (h Heartbeat) Overdue(now time.Time) bool { return !h.Deadline.IsZero() && now.After(h.Deadline) }

// Heartbeats returns the heartbeat of every running tick and piece of
// background work, oldest first. It is cheap (no I/O) and safe to call at
// any time; the supervisor reads it.
func (rt *Runtime) Heartbeats() []Heartbeat {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	now := rt.opts.Now()
	out := make([]Heartbeat, 0, len(rt.beats))
	for _, h := range rt.beats {
		c := *h
		c.Stalled = c.Silent(now) >= rt.opts.StallAfter
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Step records that the work (or tick) running under ctx made progress
// with step, in its own words ("push", "awaiting_ci"). Outside of a
// runtime's work it does nothing.
func Step(ctx context.Context, step string) {
	if b, ok := ctx.Value(beatKey{}).(*beat); ok {
		b.update(func(h *Heartbeat, now time.Time) {
			h.Step, h.LastProgressAt = step, now
		})
	}
}

type beatKey struct{}

// beat is the handle of one heartbeat in the runtime's map. It is the
// claude.Progress of the sessions run under the work's context.
type beat struct {
	rt  *Runtime
	key string
}

var _ claude.Progress = (*beat)(nil)

// startBeat registers h under key; rt.mu is held.
func (rt *Runtime) startBeat(key string, h Heartbeat) *beat {
	rt.beats[key] = &h
	return &beat{rt: rt, key: key}
}

// end removes the heartbeat: the work is over.
func (b *beat) end() {
	b.rt.mu.Lock()
	defer b.rt.mu.Unlock()
	delete(b.rt.beats, b.key)
}

// with returns ctx carrying the beat, for Step and for claude sessions.
func (b *beat) with(ctx context.Context) context.Context {
	return context.WithValue(claude.WithProgress(ctx, b), beatKey{}, b)
}

func (b *beat) update(fn func(h *Heartbeat, now time.Time)) {
	b.rt.mu.Lock()
	defer b.rt.mu.Unlock()
	if h, ok := b.rt.beats[b.key]; ok {
		fn(h, b.rt.opts.Now())
	}
}

// SessionStarted implements claude.Progress.
func (b *beat) SessionStarted(pgid int, deadline time.Time) {
	b.update(func(h *Heartbeat, now time.Time) {
		h.PGID, h.Deadline, h.Step, h.LastProgressAt = pgid, deadline, "claude started", now
		h.Sessions++
	})
}

// SessionEvent implements claude.Progress.
func (b *beat) SessionEvent(kind string) {
	if kind == "" {
		kind = "output"
	}
	b.update(func(h *Heartbeat, now time.Time) {
		h.Step, h.LastProgressAt = "claude "+kind, now
		h.Events++
	})
}

// SessionEnded implements claude.Progress.
func (b *beat) SessionEnded() {
	b.update(func(h *Heartbeat, now time.Time) {
		h.PGID, h.Deadline, h.Step, h.LastProgressAt = 0, time.Time{}, "claude ended", now
	})
}
