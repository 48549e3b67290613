package forgeview_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forgeview"
)

// lister counts reads; during, when set, runs inside each read.
type lister struct {
	n      atomic.Int32
	during func()
}

func (l *lister) ListPulls(_ context.Context, state forge.State) ([]forge.PullRequest, error) {
	n := l.n.Add(1)
	if l.during != nil {
		l.during()
	}
	return []forge.PullRequest{{Number: int64(n), State: state}}, nil
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newView(l *lister) (*forgeview.View, *clock) {
	c := &clock{now: time.Unix(1e9, 0)}
	return forgeview.New(forgeview.Options{Forge: l, MaxAge: time.Minute, Now: c.Now}), c
}

func reads(t *testing.T, v *forgeview.View, reuse bool) int64 {
	t.Helper()
	ps, err := v.OpenPulls(context.Background(), reuse)
	if err != nil || len(ps) != 1 {
		t.Fatalf("OpenPulls = %v, %v", ps, err)
	}
	return ps[0].Number
}

func TestListingIsReusedForMaxAge(t *testing.T) {
	l := &lister{}
	v, c := newView(l)
	if got := reads(t, v, true); got != 1 {
		t.Fatalf("first read %d", got)
	}
	c.add(59 * time.Second)
	if got := reads(t, v, true); got != 1 {
		t.Errorf("within MaxAge: listing %d, want the kept one", got)
	}
	c.add(time.Second)
	if got := reads(t, v, true); got != 2 {
		t.Errorf("at MaxAge: listing %d, want a new read", got)
	}
}

func TestReadWithoutReuseGoesToTheForgeAndIsKept(t *testing.T) {
	l := &lister{}
	v, _ := newView(l)
	reads(t, v, true)
	if got := reads(t, v, false); got != 2 {
		t.Fatalf("a read without reuse returned listing %d, want a new one", got)
	}
	if got := reads(t, v, true); got != 2 {
		t.Errorf("the fresh listing was not kept: %d", got)
	}
}

func TestInvalidateForcesARead(t *testing.T) {
	l := &lister{}
	v, _ := newView(l)
	reads(t, v, true)
	v.Invalidate()
	if got := reads(t, v, true); got != 2 {
		t.Errorf("after Invalidate: listing %d, want a new read", got)
	}
}

// A write landing while the forge is read may postdate the listing: the
// listing is returned to its reader but not kept.
func TestInvalidateDuringAReadIsNotLost(t *testing.T) {
	l := &lister{}
	v, _ := newView(l)
	l.during = func() { v.Invalidate() }
	reads(t, v, true)
	l.during = nil
	if got := reads(t, v, true); got != 2 {
		t.Errorf("listing %d kept across an invalidation during its read", got)
	}
}

func TestConcurrentReadersShareOneRead(t *testing.T) {
	l := &lister{}
	v, _ := newView(l)
	release := make(chan struct{})
	l.during = func() { <-release }
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads(t, v, true)
		}()
	}
	time.Sleep(20 * time.Millisecond) // let them queue behind the first read
	close(release)
	wg.Wait()
	if n := l.n.Load(); n != 1 {
		t.Errorf("4 concurrent readers made %d reads, want 1", n)
	}
}

func TestCallersOwnTheirSlice(t *testing.T) {
	l := &lister{}
	v, _ := newView(l)
	ps, _ := v.OpenPulls(context.Background(), true)
	ps[0].Number = 99
	if got := reads(t, v, true); got != 1 {
		t.Errorf("a caller's change reached the kept listing: %d", got)
	}
}

func TestSetSharesOneViewPerProject(t *testing.T) {
	var s forgeview.Set
	a, b := &lister{}, &lister{}
	v1 := s.Of("p", forgeview.Options{Forge: a})
	if v2 := s.Of("p", forgeview.Options{Forge: b}); v2 != v1 {
		t.Fatal("a second role of the project got its own view")
	}
	if s.Of("q", forgeview.Options{Forge: b}) == v1 {
		t.Fatal("two projects share a view")
	}
	reads(t, v1, true)
	if a.n.Load() != 1 || b.n.Load() != 0 {
		t.Errorf("reads: first source %d, second %d; want the first source's", a.n.Load(), b.n.Load())
	}
}
