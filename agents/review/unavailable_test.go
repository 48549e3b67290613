package review_test

import (
	"context"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox"
)

// unreachableCheckout fails its first checkouts as git does when the
// forge does not answer.
type unreachableCheckout struct {
	inner review.Checkout
	fails atomic.Int32
}

func (c *unreachableCheckout) Checkout(ctx context.Context, pr int64, sha string) (*sandbox.Workspace, error) {
	if c.fails.Add(-1) >= 0 {
		return nil, &git.Error{Args: []string{"fetch"}, Stderr: "fatal: unable to access 'http://forge/x.git/': Failed to connect to forge port 3000: Connection refused"}
	}
	return c.inner.Checkout(ctx, pr, sha)
}

func (c *unreachableCheckout) Diff(ctx context.Context, from, to string) (string, bool, error) {
	return c.inner.Diff(ctx, from, to)
}

func (c *unreachableCheckout) PrimaryFS(ctx context.Context) (fs.FS, error) {
	return c.inner.PrimaryFS(ctx)
}

func (c *unreachableCheckout) Remove(ctx context.Context, pr int64) error {
	return c.inner.Remove(ctx, pr)
}

// A forge that cannot be reached while a review is prepared is not the
// pull request's fault: more failures than the breaker allows leave no
// error comment and no strike, and once the forge answers the review
// runs. (They used to count against the head: a short outage stopped the
// pull request's reviews until someone pushed.)
func TestForgeUnreachableIsNoStrike(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	co := &unreachableCheckout{}
	co.fails.Store(4)
	h.a = h.newAgent(func(h *harness, o *review.Options) {
		co.inner = o.Checkout
		o.Checkout = co
	})
	pr := h.openGreenPR("Change", "change")
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "fine"}))
	for range 4 {
		h.tick()
	}
	h.wantSessions(0)
	if cs := h.comments(pr.Number); len(cs) != 0 {
		t.Errorf("the unreachable forge left %d comments on the pull request: %q", len(cs), cs[0].Body)
	}
	recs := h.led.Records()
	if len(recs) != 4 || recs[0].Reason != ledger.ReasonEngineError || recs[0].Code != agent.CodeGitUnavailable {
		t.Errorf("records of the failed attempts: %+v", recs)
	}
	h.tick()
	h.wantSessions(1)
	if rs := h.botReviews(pr.Number); len(rs) != 1 {
		t.Errorf("reviews after the forge came back: %+v", rs)
	}
}
