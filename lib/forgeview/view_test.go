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

func TestSetSharesOneListingPerProject(t *testing.T) {
	var s forgeview.Set
	a, b, other := &lister{}, &lister{}, &lister{}
	ra, rb := s.Of("p", forgeview.Options{Forge: a}), s.Of("p", forgeview.Options{Forge: b})
	ctx := context.Background()
	if _, err := ra.OpenPulls(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.OpenPulls(ctx, true); err != nil {
		t.Fatal(err)
	}
	if a.n.Load() != 1 || b.n.Load() != 0 {
		t.Errorf("reads: first role %d, second %d; want one read, shared", a.n.Load(), b.n.Load())
	}
	if _, err := s.Of("q", forgeview.Options{Forge: other}).OpenPulls(ctx, true); err != nil || other.n.Load() != 1 {
		t.Errorf("another project reused the listing: %d reads, %v", other.n.Load(), err)
	}
	// A read the listing cannot spare goes out as the asking role.
	if _, err := rb.OpenPulls(ctx, false); err != nil || b.n.Load() != 1 || a.n.Load() != 1 {
		t.Errorf("a fresh read by the second role: reads %d and %d, %v", a.n.Load(), b.n.Load(), err)
	}
}

// refusing is a role whose token the forge no longer takes.
type refusing struct{}

func (refusing) ListPulls(context.Context, forge.State) ([]forge.PullRequest, error) {
	return nil, forge.ErrUnauthorized
}

// TestARefusedRoleHoldsNoOtherBack: the roles of a project share a
// listing, not an identity: when one role's token is revoked, its reads
// fail and the others' go on.
func TestARefusedRoleHoldsNoOtherBack(t *testing.T) {
	var s forgeview.Set
	review := s.Of("p", forgeview.Options{Forge: refusing{}}) // first asked: the view is made from its options
	dev := &lister{}
	devReader := s.Of("p", forgeview.Options{Forge: dev})
	ctx := context.Background()
	if _, err := review.OpenPulls(ctx, false); err == nil {
		t.Fatal("the refused role read the forge")
	}
	if ps, err := devReader.OpenPulls(ctx, true); err != nil || len(ps) != 1 || dev.n.Load() != 1 {
		t.Fatalf("the dev role after the review role's refusal: %v, %v", ps, err)
	}
}
