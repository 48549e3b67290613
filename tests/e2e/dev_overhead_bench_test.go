package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/sandbox"
)

// timedTransport sums the time the agent's forge requests take.
type timedTransport struct {
	next http.RoundTripper
	ns   atomic.Int64
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	t.ns.Add(int64(time.Since(start)))
	return resp, err
}

// timedRunner sums the wall time of model sessions (the CLI included).
type timedRunner struct {
	claude.Runner
	ns atomic.Int64
}

func (r *timedRunner) Run(ctx context.Context, inv claude.Invocation) (claude.Result, error) {
	start := time.Now()
	defer func() { r.ns.Add(int64(time.Since(start))) }()
	return r.Runner.Run(ctx, inv)
}

// timedGit sums the time of the agent's git work that reaches the forge
// or a session's checkout (clone, fetch, push).
type timedGit struct {
	*dev.Git
	ns atomic.Int64
}

func (g *timedGit) time(start time.Time) { g.ns.Add(int64(time.Since(start))) }

func (g *timedGit) Prepare(ctx context.Context, ws *sandbox.Workspace, branch string) error {
	defer g.time(time.Now())
	return g.Git.Prepare(ctx, ws, branch)
}

func (g *timedGit) Collect(ctx context.Context, ws *sandbox.Workspace, branch string) (string, int, error) {
	defer g.time(time.Now())
	return g.Git.Collect(ctx, ws, branch)
}

func (g *timedGit) Push(ctx context.Context, sha, branch string) error {
	defer g.time(time.Now())
	return g.Git.Push(ctx, sha, branch)
}

// overheadIssues bounds the issues one benchmark scripts sessions for.
const overheadIssues = 20

// BenchmarkIssueOverhead runs backlog issues to their merge, one per op,
// with the real forge, the real CLI, a model that answers at once and CI
// and review that answer at once, and reports where an issue's time goes:
// the daemon's own overhead is the wall time less the model sessions and
// the forge requests (git work is reported apart and counted as
// overhead). Target: overhead at most 3 s per issue. Run:
// go test -run '^$' -bench IssueOverhead -benchtime 5x ./tests/e2e/
func BenchmarkIssueOverhead(b *testing.B) {
	// Issues and pull requests share numbers: the issues are #1, #3, ...
	var scenarios []claudetest.Scenario
	for n := 1; n <= 2*overheadIssues; n += 2 {
		scenarios = append(scenarios, claudetest.Scenario{Name: fmt.Sprintf("overhead-%d", n),
			Marker: fmt.Sprintf("Issue #%d: ", n), Turns: []claudetest.Turn{
				implement(fmt.Sprintf("change-%d.txt", n), "a change"),
				claudetest.Text("Changed it."),
			}})
	}
	e := newDevEnv(b, scenarios...)
	u := e.srv.NewUser(b, "dev-bot")
	ctx := context.Background()
	if err := e.repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
		b.Fatal(err)
	}
	tr := &timedTransport{next: http.DefaultTransport}
	bot := startBot(b, botParams{ForgeURL: e.srv.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login, Password: u.Password,
		Token: u.Token, ModelURL: e.modelURL, Data: b.TempDir(), ReviewBot: e.reviewer.Login, Mirror: e.mirror,
		HTTPClient: &http.Client{Transport: tr}})
	run := &timedRunner{Runner: bot.runner}
	g := &timedGit{Git: bot.git}
	bot.rebuild(func(o *dev.Options) { o.Claude, o.Git = run, g })
	bot.tick() // resolves the identity and makes the clone
	tr.ns.Store(0)
	g.ns.Store(0)
	var wall time.Duration
	issues := 0
	for b.Loop() {
		if issues == overheadIssues {
			b.Fatalf("more than %d issues; run with -benchtime up to %dx", overheadIssues, overheadIssues)
		}
		issues++
		in, err := e.repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("change %d", issues), Body: "Make a change.",
			Labels: []forge.LabelName{forge.LabelBacklog}})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		bot.tick() // claim, session, pull request
		pr := e.onlyPull(fmt.Sprintf("fix/issue-%d", in.Number))
		b.StopTimer()
		e.ci(pr, forge.CISuccess, "green")
		b.StartTimer()
		bot.tick() // CI green: waiting for review
		b.StopTimer()
		e.review(pr, forge.ReviewApprove, "LGTM")
		b.StartTimer()
		bot.tick() // approved: merge
		wall += time.Since(start)
		if p := e.pull(pr.Number); !p.Merged {
			b.Fatalf("pull request #%d not merged", pr.Number)
		}
	}
	per := func(ns int64) float64 { return time.Duration(ns).Seconds() / float64(issues) }
	model, forgeTime, gitTime := per(run.ns.Load()), per(tr.ns.Load()), per(g.ns.Load())
	total := wall.Seconds() / float64(issues)
	b.ReportMetric(total, "wall-s/issue")
	b.ReportMetric(model, "model-s/issue")
	b.ReportMetric(forgeTime, "forge-s/issue")
	b.ReportMetric(gitTime, "git-s/issue")
	b.ReportMetric(total-model-forgeTime, "overhead-s/issue")
}
