package review_test

import (
	"context"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
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

// A post whose answer is lost (the connection reset after the forge
// applied it) is not posted again by the tick that completes publishing:
// one review comment and one formal review, not two of each.
func TestLostAnswerIsNotPostedTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	proxy := forgetest.NewProxy(t, h.srv.URL)
	h.forgeURL = proxy.URL
	h.a = h.newAgent()
	pr := h.openGreenPR("Change", "change")
	h.setModel(writes(output{Verdict: "APPROVE", VerdictReason: "fine"}))
	var mu sync.Mutex
	lost := map[string]bool{}
	proxy.Observe(func(_ int, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost && !lost[r.URL.Path] &&
			(strings.HasSuffix(r.URL.Path, "/comments") || strings.HasSuffix(r.URL.Path, "/reviews")) {
			lost[r.URL.Path] = true
			proxy.ResetNext(1)
		}
	})
	for range 3 {
		h.tick()
	}
	h.wantSessions(1)
	cs := h.botComments(pr.Number, "<!-- reviewed: "+pr.HeadSHA)
	rs := h.botReviews(pr.Number)
	if len(cs) != 1 || len(rs) != 1 || rs[0].State != forge.ReviewApprove {
		t.Errorf("after lost answers: %d review comments, formal reviews %+v; want one of each", len(cs), rs)
	}
	if len(lost) != 2 {
		t.Errorf("answers lost: %v, want the comment's and the review's", lost)
	}
}
