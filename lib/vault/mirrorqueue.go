package vault

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/text"
)

// ErrRetryLater is the error of an Executor whose run changed nothing
// outside and should run again later (a mirror that did not answer): the
// dispatcher withdraws its claim and the action stays ready.
var ErrRetryLater = errors.New("nothing changed; tried again later")

// The backoff between runs of a mirror push that failed: MirrorRetryMin
// after the first failed run, doubling up to MirrorRetryMax.
const (
	MirrorRetryMin = time.Minute
	MirrorRetryMax = time.Hour
)

// MirrorRetry is one mirror push that failed and waits to run again.
type MirrorRetry struct {
	// ID is the mirror-push action; Mirror and SHA what it pushes.
	ID     string `json:"id"`
	Mirror string `json:"mirror"`
	SHA    string `json:"sha"`
	// Queued is when its first run failed; Attempts counts the failed
	// runs; Next is when it runs again; Error is the last failure.
	Queued   time.Time `json:"queued"`
	Attempts int       `json:"attempts"`
	Next     time.Time `json:"next"`
	Error    string    `json:"error"`
}

// mirrorState is the queue's file.
type mirrorState struct {
	Waiting map[string]MirrorRetry `json:"waiting,omitempty"`
	// Pushed is the last commit pushed to each mirror: an older push
	// still queued is carried by it and needs no push of its own.
	Pushed map[string]string `json:"pushed,omitempty"`
}

// MirrorQueue is the durable side of the mirror pushes: which failed and
// when each runs again, and what each mirror last received. The pushes
// themselves are vault actions in the ops repository, pending until one
// run succeeds (or an operator drops them, `disinto vault drop`); the
// queue only spaces their runs out, across restarts of the daemon. A
// lost or torn file costs one early retry, nothing more.
type MirrorQueue struct {
	path string
	mu   sync.Mutex
	st   mirrorState
}

// OpenMirrorQueue reads the queue kept at path (under the data dir:
// datadir.Layout.MirrorQueue); a missing file is an empty queue.
func OpenMirrorQueue(path string) (*MirrorQueue, error) {
	st, _, err := atomicfile.ReadState[mirrorState](path)
	if err != nil {
		return nil, err
	}
	return &MirrorQueue{path: path, st: st}, nil
}

// List returns the pushes waiting, by id.
func (q *MirrorQueue) List() []MirrorRetry {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]MirrorRetry, 0, len(q.st.Waiting))
	for _, r := range q.st.Waiting {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// waiting returns the retry of id, if it waits.
func (q *MirrorQueue) waiting(id string) (MirrorRetry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.st.Waiting[id]
	return r, ok
}

// pushed returns the commit last pushed to mirror ("" for none known).
func (q *MirrorQueue) pushed(mirror string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st.Pushed[mirror]
}

// failed notes a failed run of the push id and returns when it runs
// again.
func (q *MirrorQueue) failed(id, mirror, sha string, cause error, now time.Time) (MirrorRetry, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.st.Waiting[id]
	if !ok {
		r = MirrorRetry{ID: id, Mirror: mirror, SHA: sha, Queued: now}
	}
	r.Attempts++
	r.Next = now.Add(min(MirrorRetryMin<<min(r.Attempts-1, 6), MirrorRetryMax))
	r.Error = cause.Error()
	if q.st.Waiting == nil {
		q.st.Waiting = map[string]MirrorRetry{}
	}
	q.st.Waiting[id] = r
	return r, q.saveLocked()
}

// done notes that id pushed sha to mirror.
func (q *MirrorQueue) done(id, mirror, sha string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.st.Waiting, id)
	if q.st.Pushed == nil {
		q.st.Pushed = map[string]string{}
	}
	q.st.Pushed[mirror] = sha
	return q.saveLocked()
}

// Forget drops id from the queue: its action has a result (it ran, or an
// operator dropped it), so it never runs again.
func (q *MirrorQueue) Forget(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.st.Waiting[id]; !ok {
		return nil
	}
	delete(q.st.Waiting, id)
	return q.saveLocked()
}

func (q *MirrorQueue) saveLocked() error {
	if err := atomicfile.WriteState(q.path, q.st); err != nil {
		return fmt.Errorf("mirror queue: %w", err)
	}
	return nil
}

// Defer says why a mirror push must not run yet ("" when it may): it
// failed and its backoff has not run out.
func (m *MirrorPusher) Defer(a Action) string {
	if m.o.Queue == nil || a.Formula != MirrorFormula {
		return ""
	}
	r, ok := m.o.Queue.waiting(a.ID)
	if !ok || !r.Next.After(m.o.Now()) {
		return ""
	}
	return fmt.Sprintf("mirror push to %s of %s failed %d times, last: %s; next try at %s",
		r.Mirror, text.ShortSHA(r.SHA), r.Attempts, r.Error, r.Next.UTC().Format(time.RFC3339))
}

// Forget implements the dispatcher's deferrer: id has a result.
func (m *MirrorPusher) Forget(id string) {
	if m.o.Queue != nil {
		if err := m.o.Queue.Forget(id); err != nil {
			m.o.Log.Warn().Err(err).Msg("mirror queue not saved")
		}
	}
}

// deferrer is the optional capability of an Executor that holds some
// actions back for a while (a mirror push waiting out its backoff), and
// is told when an action has a result.
type deferrer interface {
	Defer(a Action) string
	Forget(id string)
}

var _ deferrer = (*MirrorPusher)(nil)

// Defer asks the runner of a's formula.
func (rs Executors) Defer(a Action) string {
	if d, ok := rs.runner(a.Formula).(deferrer); ok {
		return d.Defer(a)
	}
	return ""
}

// Forget tells every runner that can hold an action back.
func (rs Executors) Forget(id string) {
	for _, r := range rs.By {
		if d, ok := r.(deferrer); ok {
			d.Forget(id)
		}
	}
	if d, ok := rs.Default.(deferrer); ok {
		d.Forget(id)
	}
}

// runner is the runner of formula (nil for none).
func (rs Executors) runner(formula string) Executor {
	if r, ok := rs.By[formula]; ok {
		return r
	}
	return rs.Default
}

// carried reports whether sha is already on mirror: an ancestor of the
// commit last pushed there. Unknown (no push recorded, or the clone
// cannot tell) is false, and the push runs.
func (m *MirrorPusher) carried(ctx context.Context, ancestor func(ctx context.Context, a, b string) (bool, error), mirror, sha string) (string, bool) {
	if m.o.Queue == nil {
		return "", false
	}
	last := m.o.Queue.pushed(mirror)
	if last == "" {
		return "", false
	}
	ok, err := ancestor(ctx, sha, last)
	return last, err == nil && ok
}
