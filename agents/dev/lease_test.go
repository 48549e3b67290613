package dev

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

const testLease = 15 * time.Minute

func leased(instance string) func(*Options) {
	return func(o *Options) { o.Lease, o.Instance = testLease, instance }
}

// replica builds another agent of the same bot on the same forge, with a
// data dir and instance of its own: the dev agent of another replica.
func (h *harness) replica(instance string) *Agent {
	h.t.Helper()
	data, opts := h.data, h.opts
	h.data, h.opts = h.t.TempDir(), leased(instance)
	defer func() { h.data, h.opts = data, opts }()
	return h.newAgent()
}

func (h *harness) tickOf(a *Agent) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.rt.Tick(ctx, a, &config.Project{Name: "proj"}, config.RoleDev, agent.CauseManual); err != nil {
		h.t.Fatalf("tick: %v", err)
	}
	if err := h.rt.Wait(ctx); err != nil {
		h.t.Fatalf("wait: %v", err)
	}
}

func (h *harness) commentsWith(n int64, sub string) int {
	count := 0
	for _, c := range h.f.commentsOf(n) {
		if strings.Contains(c.Body, sub) {
			count++
		}
	}
	return count
}

// TestLeaseHandsOverOnlyAfterItLapses: two replicas act as one bot. The
// second, to which the project moved, leaves alone the issue the first
// works on while the first renews its lease; once the first has been
// silent for a lease period the second takes the issue over with one
// comment and resumes it from the forge; the first, back, lets it go.
func TestLeaseHandsOverOnlyAfterItLapses(t *testing.T) {
	h := newHarness(t, pushing, leased("a"))
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	driveToPR(t, h, n)
	if got := h.commentsWith(n, "instance=a"); got != 1 {
		t.Fatalf("%d lease comments of instance a after the claim, want 1", got)
	}
	b := h.replica("b")
	for range 3 {
		h.tickOf(b)
		if _, ok, _ := b.st.load(n); ok {
			t.Fatal("the second replica adopted an issue whose lease is live")
		}
		h.advanceClock(testLease / 2)
		h.tick() // the holder renews
	}
	h.advanceClock(testLease + time.Minute) // the holder is gone
	h.tickOf(b)
	st, ok, err := b.st.load(n)
	if err != nil || !ok || st.Stage != StageAwaitingCI {
		t.Fatalf("after the lease lapsed the second replica has %+v, %v, %v; want the issue adopted awaiting CI", st, ok, err)
	}
	if got := h.commentsWith(n, "Taking this issue over"); got != 1 {
		t.Fatalf("%d takeover comments, want 1", got)
	}
	if len(h.r.Calls()) != 1 {
		t.Fatalf("%d sessions, want 1: the pull request is resumed, not redone", len(h.r.Calls()))
	}
	h.tick() // the first replica comes back
	if _, ok, _ := h.a.st.load(n); ok {
		t.Fatal("the first replica kept the state of an issue taken over")
	}
	h.advanceClock(testLease)
	h.tickOf(b)
	h.tick()
	if _, ok, _ := b.st.load(n); !ok {
		t.Fatal("the new holder lost the issue")
	}
	if got := h.commentsWith(n, "Taking this issue over"); got != 1 {
		t.Fatalf("%d takeover comments after more ticks, want 1", got)
	}
}

// TestLeaselessIssueWaitsALeasePeriod: an in-progress issue of the bot
// without a lease (claimed before leases, or by a replica that died
// before posting one) is adopted only once it has not changed for a
// lease period.
func TestLeaselessIssueWaitsALeasePeriod(t *testing.T) {
	h := newHarness(t, pushing, leased("b"))
	n := h.f.addIssue("Fix it", "body", forge.LabelInProgress)
	h.f.assign(n, bot)
	h.tick()
	if _, ok, _ := h.a.st.load(n); ok {
		t.Fatal("adopted an issue that changed a moment ago")
	}
	h.advanceClock(testLease + time.Minute)
	h.tick()
	h.wantStage(n, StageAwaitingCI)
	if got := h.commentsWith(n, "Taking this issue over"); got != 1 {
		t.Fatalf("%d takeover comments, want 1", got)
	}
}

// racingForge posts another replica's takeover just before the agent's
// own, as when two replicas find a lease lapsed at once.
type racingForge struct {
	forgeAPI
	rival string // the rival's takeover comment, posted once
}

func (f *racingForge) CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error) {
	if f.rival != "" && strings.Contains(body, "Taking this issue over") {
		if _, err := f.forgeAPI.CreateComment(ctx, n, f.rival); err != nil {
			return forge.Comment{}, err
		}
		f.rival = ""
	}
	return f.forgeAPI.CreateComment(ctx, n, body)
}

// TestConcurrentTakeoverHasOneWinner: of two replicas that take over a
// lapsed lease at once, the one whose comment came first holds the
// issue; the other withdraws its comment and leaves the issue alone.
func TestConcurrentTakeoverHasOneWinner(t *testing.T) {
	h := newHarness(t, pushing, leased("a"))
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	driveToPR(t, h, n)
	h.advanceClock(testLease + time.Minute)
	b := h.replica("b")
	rival := &Agent{o: Options{Instance: "c", Now: h.clock}}
	body, err := rival.leaseBody("Taking this issue over: instance `c` resumes it.", h.clock())
	if err != nil {
		t.Fatal(err)
	}
	b.o.Forge = &racingForge{forgeAPI: b.o.Forge, rival: body}
	h.tickOf(b)
	if _, ok, _ := b.st.load(n); ok {
		t.Fatal("the replica that came second adopted the issue")
	}
	if got := h.commentsWith(n, "instance=b"); got != 0 {
		t.Fatalf("the second takeover left %d comments, want it withdrawn", got)
	}
	if got := h.commentsWith(n, "instance=c"); got != 1 {
		t.Fatalf("%d takeovers of the winner, want 1", got)
	}
	h.advanceClock(testLease / 2)
	h.tickOf(b) // the winner's lease is live: still hands off
	if _, ok, _ := b.st.load(n); ok {
		t.Fatal("adopted an issue the winner holds")
	}
}
