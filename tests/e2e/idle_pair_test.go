package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/forgeview"
)

// idlePair is a project in its steady state, the issue's measured shape:
// 60 open issues (none ready), 6 open pull requests by a human, 3 of them
// green and reviewed, 3 with CI pending or failed on code changes. The dev
// and review agents share one runtime, each behind its own counting proxy,
// and one listing of the pull requests (read as the dev bot), as the
// daemon wires them.
type idlePair struct {
	dev, review *forgetest.Proxy
	bot         *devBot
	rv          *reviewBot

	mu  sync.Mutex
	now time.Time
}

// clock is both agents' clock; pair moves it on by the polling interval.
func (p *idlePair) clock() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now
}

func newIdlePair(t testing.TB) *idlePair {
	t.Helper()
	// Issues and pull requests share numbers: the pull requests are
	// #61-#66, and the first three are green.
	var scenarios []claudetest.Scenario
	for n := 61; n <= 63; n++ {
		scenarios = append(scenarios, claudetest.Scenario{Name: fmt.Sprintf("idle-review-%d", n),
			Marker: fmt.Sprintf("Review pull request #%d of proj", n), Turns: []claudetest.Turn{
				writeReview(`{"verdict":"APPROVE","verdict_reason":"fine"}`),
				claudetest.Text("Approved."),
			}})
	}
	e := newDevEnv(t, scenarios...)
	ctx := context.Background()
	seedIdleIssues(t, e)
	ci := []forge.CIState{forge.CISuccess, forge.CISuccess, forge.CISuccess, forge.CIPending, forge.CIPending, forge.CIFailure}
	for i, st := range ci {
		br := fmt.Sprintf("feature-%d", i)
		if _, err := e.repo.CreateBranch(ctx, br, "main"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.repo.PutFile(ctx, forge.FileChange{Path: br + ".go", Content: []byte("package x\n"), Branch: br, Message: "add " + br}); err != nil {
			t.Fatal(err)
		}
		pr, err := e.repo.CreatePull(ctx, forge.NewPull{Title: "feature " + br, Head: br, Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if pr.Number != int64(61+i) {
			t.Fatalf("pull request #%d, want #%d", pr.Number, 61+i)
		}
		e.ci(pr, st, string(st))
	}
	p := &idlePair{dev: forgetest.NewProxy(t, e.srv.URL), review: forgetest.NewProxy(t, e.srv.URL), now: time.Now()}
	u := e.srv.NewUser(t, "dev-bot")
	if err := e.repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	p.bot = startBot(t, botParams{ForgeURL: p.dev.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login, Password: u.Password,
		Token: u.Token, ModelURL: e.modelURL, Data: t.TempDir(), ReviewBot: e.reviewer.Login, Mirror: e.mirror})
	var view *forgeview.View
	p.bot.rebuild(func(o *dev.Options) {
		view = forgeview.New(forgeview.Options{Forge: o.Forge, Now: p.clock})
		o.Now, o.Pulls = p.clock, view
	})
	p.rv = e.newReviewerVia(p.bot.rt, p.review.URL, func(o *review.Options) { o.Now, o.Pulls = p.clock, view })
	// Review the green pull requests, then settle: the next pairs are idle.
	for range 3 {
		p.pair()
	}
	if n := p.reviews(); n != 3 {
		t.Fatalf("%d reviews, want the 3 green pull requests reviewed", n)
	}
	p.dev.Reset()
	p.review.Reset()
	return p
}

// reviews counts the review records in the shared runtime's ledger.
func (p *idlePair) reviews() int {
	n := 0
	for _, r := range ledgerRecords(p.bot.t, p.bot.data) {
		if r.Role == string(config.RoleReview) {
			n++
		}
	}
	return n
}

// pair ticks review then dev on their schedule, as the scheduler
// staggers them, and moves the clock on by the polling interval.
func (p *idlePair) pair() {
	t := p.bot.t
	t.Helper()
	ctx := testCtx(t)
	for _, tk := range []struct {
		a    agent.Agent
		proj *config.Project
		role config.Role
	}{{p.rv.a, p.rv.proj, config.RoleReview}, {p.bot.a, p.bot.proj, config.RoleDev}} {
		if err := p.bot.rt.Tick(ctx, tk.a, tk.proj, tk.role, agent.CauseSchedule); err != nil {
			t.Fatalf("%s tick: %v", tk.role, err)
		}
		if err := p.bot.rt.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	p.now = p.now.Add(config.DefaultInterval(config.RoleDev))
	p.mu.Unlock()
}

// TestIdleTickPairCost measures the forge requests of an idle dev and
// review tick pair, polled every 5 minutes for two hours on the shape
// above; the bound is 3 (10 before the listing and CI caches, 3.8 before
// the roles shared one listing of the pull requests).
func TestIdleTickPairCost(t *testing.T) {
	t.Parallel()
	p := newIdlePair(t)
	const pairs = 24 // two hours of polling
	for range pairs {
		p.pair()
	}
	dev, review := float64(p.dev.Total())/pairs, float64(p.review.Total())/pairs
	t.Logf("idle tick pair: %.1f forge requests (dev %.1f %v; review %.1f %v)", dev+review, dev, p.dev.Counts(), review, p.review.Counts())
	if dev+review > 3 {
		t.Errorf("idle tick pair made %.1f forge requests, want at most 3", dev+review)
	}
	if n := p.reviews(); n != 3 {
		t.Errorf("idle pairs recorded %d reviews in all, want the 3 of the set-up", n)
	}
}

// BenchmarkIdleTickPair reports forge requests per idle dev and review
// tick pair. Run: go test -run '^$' -bench IdleTickPair ./tests/e2e/
func BenchmarkIdleTickPair(b *testing.B) {
	p := newIdlePair(b)
	for b.Loop() {
		p.pair()
	}
	b.ReportMetric(float64(p.dev.Total())/float64(b.N), "dev-requests/op")
	b.ReportMetric(float64(p.review.Total())/float64(b.N), "review-requests/op")
	b.ReportMetric(float64(p.dev.Total()+p.review.Total())/float64(b.N), "requests/pair")
}
