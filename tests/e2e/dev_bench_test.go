package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox"
)

// countingRunner counts model sessions (child processes of the agent).
type countingRunner struct {
	claude.Runner
	n atomic.Int64
}

func (c *countingRunner) Run(ctx context.Context, inv claude.Invocation) (claude.Result, error) {
	c.n.Add(1)
	return c.Runner.Run(ctx, inv)
}

// countingGit counts git operations (child processes of the agent).
type countingGit struct {
	*dev.Git
	n atomic.Int64
}

func (c *countingGit) Prepare(ctx context.Context, ws *sandbox.Workspace, branch string) error {
	c.n.Add(1)
	return c.Git.Prepare(ctx, ws, branch)
}
func (c *countingGit) Collect(ctx context.Context, ws *sandbox.Workspace, branch string) (string, int, error) {
	c.n.Add(1)
	return c.Git.Collect(ctx, ws, branch)
}
func (c *countingGit) RemoteHead(ctx context.Context, b string) (string, error) {
	c.n.Add(1)
	return c.Git.RemoteHead(ctx, b)
}
func (c *countingGit) Behind(ctx context.Context, b string) (bool, error) {
	c.n.Add(1)
	return c.Git.Behind(ctx, b)
}
func (c *countingGit) Push(ctx context.Context, sha, b string) error {
	c.n.Add(1)
	return c.Git.Push(ctx, sha, b)
}
func (c *countingGit) EmptyCommit(ctx context.Context, b, m string) (string, error) {
	c.n.Add(1)
	return c.Git.EmptyCommit(ctx, b, m)
}
func (c *countingGit) PrimaryFS(ctx context.Context) (fs.FS, error) {
	c.n.Add(1)
	return c.Git.PrimaryFS(ctx)
}

// seedIdleIssues opens 60 issues: 45 not in the backlog and 15 backlog
// issues, each blocked by an open dependency or held by another bot.
func seedIdleIssues(t testing.TB, e *devEnv) {
	t.Helper()
	ctx := context.Background()
	var deps []int64
	for i := 0; i < 45; i++ {
		in, err := e.repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("idea %d", i), Body: "not ready"})
		if err != nil {
			t.Fatal(err)
		}
		deps = append(deps, in.Number)
	}
	for i := 0; i < 15; i++ {
		body := fmt.Sprintf("## Depends on\n- #%d\n", deps[i])
		in := forge.NewIssue{Title: fmt.Sprintf("task %d", i), Body: body, Labels: []forge.LabelName{forge.LabelBacklog}}
		if i%5 == 0 {
			in.Body, in.Assignees = "ready, but held by another bot", []string{e.owner.Login}
		}
		if _, err := e.repo.CreateIssue(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
}

// idleProject seeds 60 open issues (15 backlog, every one blocked by an
// open dependency or held by another bot) and 6 open pull requests by
// someone else, and returns a dev agent whose forge requests go through a
// counting proxy.
func idleProject(t testing.TB) (*forgetest.Proxy, *devBot, *countingRunner, *countingGit) {
	e := newDevEnv(t)
	ctx := context.Background()
	seedIdleIssues(t, e)
	for i := 0; i < 6; i++ {
		br := fmt.Sprintf("feature-%d", i)
		if _, err := e.repo.CreateBranch(ctx, br, "main"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.repo.PutFile(ctx, forge.FileChange{Path: br + ".txt", Content: []byte("x\n"), Branch: br, Message: "add " + br}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.repo.CreatePull(ctx, forge.NewPull{Title: "feature " + br, Head: br, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := forgetest.NewProxy(t, e.srv.URL)
	u := e.srv.NewUser(t, "dev-bot")
	if err := e.repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	p := botParams{ForgeURL: proxy.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login, Password: u.Password,
		Token: u.Token, ModelURL: e.modelURL, Data: t.TempDir(), ReviewBot: e.reviewer.Login, Mirror: e.mirror}
	b := startBot(t, p)
	run := &countingRunner{Runner: b.runner}
	g := &countingGit{Git: b.git}
	b.rebuild(func(o *dev.Options) { o.Claude, o.Git = run, g })
	return proxy, b, run, g
}

func TestDevIdleTickCost(t *testing.T) {
	t.Parallel()
	proxy, b, run, g := idleProject(t)
	b.tick() // the first tick also resolves the bot's identity
	const ticks = 5
	proxy.Reset()
	for i := 0; i < ticks; i++ {
		b.tick()
	}
	per := float64(proxy.Total()) / ticks
	t.Logf("idle tick: %.1f forge requests (%v), %d model sessions, %d git commands", per, proxy.Counts(), run.n.Load(), g.n.Load())
	if per > 6 {
		t.Fatalf("idle tick made %.1f forge requests, want at most 6: %v", per, proxy.Counts())
	}
	if run.n.Load() != 0 || g.n.Load() != 0 {
		t.Fatalf("idle ticks started %d sessions and %d git commands", run.n.Load(), g.n.Load())
	}
}

// BenchmarkDevIdleTick reports forge requests per idle tick.
func BenchmarkDevIdleTick(b *testing.B) {
	proxy, bot, _, _ := idleProject(b)
	bot.tick()
	proxy.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bot.tick()
	}
	b.ReportMetric(float64(proxy.Total())/float64(b.N), "requests/tick")
}
