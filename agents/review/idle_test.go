package review_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox"
)

// countingCheckout counts every git operation the agent asks for: each one
// starts git processes.
type countingCheckout struct {
	inner review.Checkout
	calls atomic.Int32
}

func (c *countingCheckout) Checkout(ctx context.Context, pr int64, sha string) (*sandbox.Workspace, error) {
	c.calls.Add(1)
	return c.inner.Checkout(ctx, pr, sha)
}

func (c *countingCheckout) Diff(ctx context.Context, from, to string) (string, bool, error) {
	c.calls.Add(1)
	return c.inner.Diff(ctx, from, to)
}

func (c *countingCheckout) PrimaryFS(ctx context.Context) (fs.FS, error) {
	c.calls.Add(1)
	return c.inner.PrimaryFS(ctx)
}

func (c *countingCheckout) Remove(ctx context.Context, pr int64) error {
	c.calls.Add(1)
	return c.inner.Remove(ctx, pr)
}

// idleProject is the reference's measured shape: six open pull requests,
// all reviewed at their heads (three approved, three waiting for changes,
// which keeps their worktrees and sessions).
func idleProject(t testing.TB) (*harness, *forgetest.Proxy, *countingCheckout) {
	t.Helper()
	h := newHarness(t)
	proxy := forgetest.NewProxy(t, h.srv.URL)
	h.forgeURL = proxy.URL
	counting := &countingCheckout{}
	h.a = h.newAgent(func(h *harness, o *review.Options) {
		counting.inner = o.Checkout
		o.Checkout = counting
	})
	for i := range 6 {
		h.openGreenPR(fmt.Sprintf("Change %d", i), fmt.Sprintf("change-%d", i))
	}
	h.setModel(func(n int, inv claude.Invocation) (claude.Result, error) {
		v := "APPROVE"
		if n%2 == 1 {
			v = "REQUEST_CHANGES"
		}
		return writes(output{Verdict: v, VerdictReason: "measured"})(n, inv)
	})
	h.tick()
	h.tick()
	h.wantSessions(6)
	h.tick() // settles: nothing left to do
	h.wantSessions(6)
	return h, proxy, counting
}

// TestIdleTickCost: the reference's review-poll makes 14 forge requests per
// idle cycle with 6 reviewed open pull requests; ours makes one (the list
// of open pull requests) and starts no process.
func TestIdleTickCost(t *testing.T) {
	t.Parallel()
	h, proxy, counting := idleProject(t)
	proxy.Reset()
	counting.calls.Store(0)
	h.tick()
	if n := proxy.Total(); n > 2 {
		t.Errorf("idle tick made %d forge requests, want at most 2: %v", n, proxy.Counts())
	}
	if n := counting.calls.Load(); n != 0 {
		t.Errorf("idle tick ran %d git operations", n)
	}
	h.wantSessions(6)
	t.Logf("idle tick with 6 reviewed pull requests: %d forge requests %v, 0 processes", proxy.Total(), proxy.Counts())
}

// BenchmarkIdleTick reports forge requests and git operations per idle
// tick (the reference makes 14 requests), through forgetest's counting
// proxy. Run: go test -run '^$' -bench IdleTick ./agents/review/
func BenchmarkIdleTick(b *testing.B) {
	h, proxy, counting := idleProject(b)
	proxy.Reset()
	counting.calls.Store(0)
	b.ResetTimer()
	for b.Loop() {
		h.tick()
	}
	b.StopTimer()
	b.ReportMetric(float64(proxy.Total())/float64(b.N), "requests/op")
	b.ReportMetric(float64(counting.calls.Load())/float64(b.N), "git-ops/op")
	h.wantSessions(6)
}

// TestWaitingForCICost: a pull request whose code change waits for CI
// costs its diff once per head, its CI state every scheduled tick until
// it read the same twice, then once per recheck interval; an event tick
// reads it at once, and a green result is reviewed.
func TestWaitingForCICost(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := newHarness(t)
	proxy := forgetest.NewProxy(t, h.srv.URL)
	h.forgeURL = proxy.URL
	h.a = h.newAgent(func(_ *harness, o *review.Options) { o.Now = clock })
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "fine"}))
	pr := h.openPR("Change", "change", "main", map[string]string{"lib/change.sh": "echo change\n"})
	h.ci(pr.HeadSHA, forge.CIPending)
	h.tickAs(agent.CauseSchedule) // resolves the bot, syncs the state
	statuses := func() (n, diffs int) {
		for k, c := range proxy.Counts() {
			switch {
			case strings.HasSuffix(k, "/status"):
				n += c
			case strings.HasSuffix(k, ".diff"):
				diffs += c
			}
		}
		return n, diffs
	}
	proxy.Reset()
	// Scheduled ticks a quarter of the recheck interval apart.
	step := review.CIRecheck / 4
	for range 5 {
		later(step)
		h.tickAs(agent.CauseSchedule)
	}
	// The first step reads it pending a second time; the next three wait;
	// the fifth, a recheck interval after the last read, reads again.
	if n, diffs := statuses(); n != 2 || diffs != 0 {
		t.Fatalf("5 scheduled ticks: %d CI reads, %d diffs; want 2 and none (the first tick read the diff) %v", n, diffs, proxy.Counts())
	}
	h.tickAs(agent.CauseEvent)
	if n, _ := statuses(); n != 3 {
		t.Fatalf("an event tick did not read CI: %d reads", n)
	}
	h.ci(pr.HeadSHA, forge.CISuccess)
	later(review.CIRecheck)
	h.tickAs(agent.CauseSchedule)
	h.wantSessions(1)
}
