// Package forgeview is the per-project view of the forge that the polling
// roles share: the open pull requests, read once per tick window and handed
// to every role of the project that lists them (the dev agents, lanes
// included, and the review agent), instead of one list per role per tick.
//
// A view is a cache and never a source of truth. A listing is reused for
// at most MaxAge (shorter than the polling interval); a tick caused by an
// event reads afresh, and so does the first read after an invalidation
// (the agents invalidate the view after their own writes). What an agent
// does on a listing's word is re-read before it acts (the claim protocol,
// the merge's head check), so a stale listing costs a tick, never a
// wrong action.
//
// Gitea and Forgejo answer neither If-None-Match nor If-Modified-Since on
// their API's list endpoints (only raw file contents carry an ETag; see
// conditional_test.go), so a refresh is a full list: what saves requests
// here is reading once for all roles, not revalidating.
package forgeview

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// DefaultMaxAge is how long a listing is reused when Options.MaxAge is
// zero: long enough to span the stagger between a project's dev and
// review ticks (seconds), far shorter than their polling interval.
const DefaultMaxAge = 30 * time.Second

// Source lists a project's pull requests. *forge.RepoClient implements it.
type Source interface {
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
}

var _ Source = (*forge.RepoClient)(nil)

// Options configures a View.
type Options struct {
	// Forge reads the project; any identity that may read it will do.
	Forge Source
	// MaxAge bounds how long a listing is reused; DefaultMaxAge if zero.
	MaxAge time.Duration
	// Now is the clock the age is measured on; time.Now when nil.
	Now func() time.Time
}

// View is one project's shared listing. It is safe for concurrent use.
type View struct {
	o Options

	// fetch serialises reads of the forge, so that roles asking at once
	// share one request.
	fetch sync.Mutex

	mu    sync.Mutex
	gen   uint64 // bumped by Invalidate
	pulls []forge.PullRequest
	at    time.Time
	valid bool
}

// New returns an empty view of o.Forge.
func New(o Options) *View {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &View{o: o}
}

// OpenPulls returns the project's open pull requests. With reuse, a
// listing read less than MaxAge ago and not invalidated since is returned
// without a request; otherwise the forge is read, and the answer is kept
// for the next caller unless the view was invalidated while it was read.
// The slice is the caller's own.
func (v *View) OpenPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error) {
	return v.openPulls(ctx, reuse, v.o.Forge)
}

// openPulls is OpenPulls reading the forge, when it must, through src.
func (v *View) openPulls(ctx context.Context, reuse bool, src Source) ([]forge.PullRequest, error) {
	if ps, ok := v.cached(reuse); ok {
		return ps, nil
	}
	v.fetch.Lock()
	defer v.fetch.Unlock()
	// Another caller may have read while this one waited.
	if ps, ok := v.cached(reuse); ok {
		return ps, nil
	}
	v.mu.Lock()
	gen := v.gen
	v.mu.Unlock()
	at := v.o.Now()
	ps, err := src.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if gen == v.gen {
		v.pulls, v.at, v.valid = ps, at, true
	}
	v.mu.Unlock()
	return slices.Clone(ps), nil
}

// cached returns a copy of the kept listing when reuse allows it and it is
// still fresh.
func (v *View) cached(reuse bool) ([]forge.PullRequest, bool) {
	if !reuse {
		return nil, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	age := v.o.Now().Sub(v.at)
	if !v.valid || age < 0 || age >= v.o.MaxAge {
		return nil, false
	}
	return slices.Clone(v.pulls), true
}

// Invalidate drops the kept listing: the next read goes to the forge. A
// read under way when it is called is not kept either (it may predate
// the change that invalidated the view).
func (v *View) Invalidate() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	v.valid = false
	v.pulls = nil
}

// Reader is one role's access to a shared View: the listing is shared,
// but when it must be read the forge is asked with the role's own
// identity, so a role whose token the forge refuses fails alone and never
// holds back the other roles of its project.
type Reader struct {
	v   *View
	src Source
}

// OpenPulls is the view's OpenPulls, reading the forge as the reader's
// role.
func (r *Reader) OpenPulls(ctx context.Context, reuse bool) ([]forge.PullRequest, error) {
	return r.v.openPulls(ctx, reuse, r.src)
}

// Invalidate drops the shared listing (see View.Invalidate).
func (r *Reader) Invalidate() { r.v.Invalidate() }

// Set holds one View per project, made on first use; the zero Set is
// ready. It is how the roles of one project come to share a view.
type Set struct {
	mu sync.Mutex
	m  map[string]*View
}

// Of returns a reader of project's view for the role whose client is
// o.Forge. The view is made from o (its MaxAge and clock) when it is the
// first asked for; later callers share its listing, each reading the
// forge with its own o.Forge.
func (s *Set) Of(project string, o Options) *Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*View{}
	}
	v, ok := s.m[project]
	if !ok {
		v = New(o)
		s.m[project] = v
	}
	return &Reader{v: v, src: o.Forge}
}
