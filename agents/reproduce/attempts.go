package reproduce

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// attempt is the record of an issue's runs that failed before the session
// answered.
type attempt struct {
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
	Error string    `json:"error,omitempty"`
	// Pending is an answer that could not be applied in full: the next
	// attempt applies it again instead of starting a session.
	Pending *pending `json:"pending,omitempty"`
}

// pending is a validated outcome still to apply, with the mode and the
// run it came from.
type pending struct {
	Mode    Mode    `json:"mode"`
	Run     string  `json:"run"`
	Outcome Outcome `json:"outcome"`
}

// attempts is the per-issue failure record, kept in one JSON file of the
// state dir so that a restart does not reset the backoff. Losing it only
// costs retries.
type attempts struct {
	path string
	base time.Duration // the wait after the first failure
	mu   sync.Mutex
}

func newAttempts(dir string, base time.Duration) *attempts {
	return &attempts{path: filepath.Join(dir, "reproduce-attempts.json"), base: base}
}

// load reads the file; a missing or unreadable one is empty.
func (s *attempts) load() map[string]attempt {
	m := map[string]attempt{}
	if err := atomicfile.ReadJSON(s.path, &m); err != nil {
		return map[string]attempt{}
	}
	return m
}

// get is issue n's record.
func (s *attempts) get(n int64) attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()[strconv.FormatInt(n, 10)]
}

// due reports whether issue n may run at now: no failure yet, or the
// backoff after the last one (doubling from the base wait) has passed.
func (s *attempts) due(n int64, now time.Time) bool {
	st := s.get(n)
	return st.Count == 0 || !now.Before(st.Last.Add(s.base<<min(st.Count-1, 6)))
}

// fail records a failed attempt of issue n, with the answer still to
// apply (nil: none), and returns the new count.
func (s *attempts) fail(n int64, now time.Time, cause error, p *pending) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.load()
	k := strconv.FormatInt(n, 10)
	st := m[k]
	st.Count++
	st.Last = now
	st.Error = cause.Error()
	st.Pending = p
	m[k] = st
	return st.Count, s.save(m)
}

// clear forgets issue n (its run answered).
func (s *attempts) clear(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.load()
	k := strconv.FormatInt(n, 10)
	if _, ok := m[k]; !ok {
		return nil
	}
	delete(m, k)
	return s.save(m)
}

func (s *attempts) save(m map[string]attempt) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("attempts file: %w", err)
	}
	return atomicfile.WriteJSON(s.path, m, 0o600)
}

// ErrLockHeld means another run holds the project's stack lock.
var ErrLockHeld = errors.New("the project's stack lock is held by another run")

// stackLock takes the project's stack lock without waiting: an exclusive
// flock on <dir>/<project>-stack.lock, which the kernel releases when
// the holder dies, so a lock is never stale. It returns the release.
func stackLock(dir, project string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	p := filepath.Join(dir, project+"-stack.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", p, ErrLockHeld)
		}
		return nil, fmt.Errorf("stack lock %s: %w", p, err)
	}
	return func() { _ = f.Close() }, nil
}
