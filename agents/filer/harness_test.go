package filer_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/filer"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// filerScopes are the scopes disinto init gives the filer bot's token
// (lib/provision): repository read, issue write, user read.
var filerScopes = []string{forge.ScopeReadRepository, forge.ScopeWriteIssue, forge.ScopeReadUser}

// rig is one project on the shared Gitea as disinto init leaves it for
// the filer: an owner who plays the human (merges sprint pull requests,
// closes issues), a project repository with the labels and an ops
// repository of the owner, and a filer bot whose token has the filer's
// scopes, a writer of the project and a reader of the ops repository.
type rig struct {
	t       testing.TB
	srv     *forgetest.Server
	owner   forgetest.User
	bot     forgetest.User
	proj    *forge.RepoClient // as the owner
	ops     *forge.RepoClient // as the owner
	botProj *forge.RepoClient
	botOps  *forge.RepoClient
	led     *ledgertest.Memory
	rt      *agent.Runtime
	project *config.Project
	now     time.Time
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newRig(t testing.TB) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	srv := gitea.Get(t)
	ctx := ctxOf(t)
	r := &rig{t: t, srv: srv, led: &ledgertest.Memory{}, now: time.Date(2026, 5, 4, 10, 30, 0, 0, time.UTC)}
	r.owner = srv.NewUser(t, "owner")
	r.bot = srv.NewUser(t, "filer-bot")
	r.proj = srv.NewRepo(t, r.owner, "proj")
	r.ops = srv.NewRepo(t, r.owner, "proj-ops")
	if _, err := r.proj.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.proj.AddCollaborator(ctx, r.bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if err := r.ops.AddCollaborator(ctx, r.bot.Login, forge.PermRead); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ops.EnsureManualMerge(ctx); err != nil {
		t.Fatal(err)
	}
	basic, err := forge.New(forge.Options{URL: srv.URL, User: r.bot.Login, Password: r.bot.Password})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := basic.CreateToken(ctx, "filer", filerScopes...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := forge.New(forge.Options{URL: srv.URL, Token: tok, User: r.bot.Login})
	if err != nil {
		t.Fatal(err)
	}
	r.botProj = c.Repo(r.proj.Owner(), r.proj.Name())
	r.botOps = c.Repo(r.ops.Owner(), r.ops.Name())
	r.project = &config.Project{Name: "proj", Repo: r.proj.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main", OpsRepo: r.ops.Slug()}
	r.rt = agent.New(agent.Options{Ledger: r.led, Log: zerolog.Nop(), Now: func() time.Time { return r.now }})
	return r
}

// agent builds a filer acting as the bot, on proj (the bot's project
// client unless a wrapper is given).
func (r *rig) agent(proj filer.ProjectForge) *filer.Agent {
	r.t.Helper()
	if proj == nil {
		proj = r.botProj
	}
	a, err := filer.New(filer.Options{Project: "proj", Repo: r.proj.Slug(), Bot: r.bot.Login, Forge: proj, Ops: r.botOps,
		Now: func() time.Time { return r.now }, Log: zerolog.Nop()})
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

// run is one pass of the filer.
func (r *rig) run(ctx context.Context, a *filer.Agent) error {
	return r.rt.Tick(ctx, a, r.project, config.RoleFiler, agent.CauseManual)
}

// mustRun is a pass that must succeed.
func (r *rig) mustRun() {
	r.t.Helper()
	if err := r.run(ctxOf(r.t), r.agent(nil)); err != nil {
		r.t.Fatalf("filer pass: %v", err)
	}
}

// issue opens an issue as the owner with labels.
func (r *rig) issue(title, body string, labels ...forge.LabelName) forge.Issue {
	r.t.Helper()
	is, err := r.proj.CreateIssue(ctxOf(r.t), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		r.t.Fatal(err)
	}
	return is
}

// vision opens a vision issue.
func (r *rig) vision(title string) forge.Issue {
	r.t.Helper()
	return r.issue(title, "The goal: "+title, forge.LabelVision)
}

// mergeSprint adds files on a branch of the ops repository, opens a pull
// request titled "architect: <title>" and merges it as the owner.
func (r *rig) mergeSprint(title string, files map[string]string) forge.PullRequest {
	r.t.Helper()
	pr := r.openSprint(title, files)
	ctx := ctxOf(r.t)
	if err := r.ops.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
		r.t.Fatalf("merge sprint pull request: %v", err)
	}
	got, err := r.ops.GetPull(ctx, pr.Number)
	if err != nil || !got.Merged {
		r.t.Fatalf("sprint pull request not merged: %+v %v", got, err)
	}
	return got
}

var branchSeq atomic.Int64

// openSprint adds files on a new branch of the ops repository and opens a
// pull request titled "architect: <title>".
func (r *rig) openSprint(title string, files map[string]string) forge.PullRequest {
	r.t.Helper()
	return r.openPull(forge.SprintTitlePrefix+" "+title, files)
}

// openPull adds files on a new branch of the ops repository and opens a
// pull request with title.
func (r *rig) openPull(title string, files map[string]string) forge.PullRequest {
	r.t.Helper()
	ctx := ctxOf(r.t)
	branch := fmt.Sprintf("architect/sprint-%d", branchSeq.Add(1))
	if _, err := r.ops.CreateBranch(ctx, branch, "main"); err != nil {
		r.t.Fatal(err)
	}
	var nf []forge.NewFile
	for p, c := range files {
		nf = append(nf, forge.NewFile{Path: p, Content: []byte(c)})
	}
	if err := r.ops.CreateFiles(ctx, branch, "sprint: add "+title, nf); err != nil {
		r.t.Fatal(err)
	}
	pr, err := r.ops.CreatePull(ctx, forge.NewPull{Title: title, Body: "pitch", Head: branch, Base: "main"})
	if err != nil {
		r.t.Fatal(err)
	}
	return pr
}

// issues lists every issue of the project, open and closed.
func (r *rig) issues() []forge.Issue {
	r.t.Helper()
	is, err := r.proj.ListIssues(ctxOf(r.t), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		r.t.Fatal(err)
	}
	return is
}

// filed returns the issues the bot filed, by title.
func (r *rig) filed() map[string]forge.Issue {
	r.t.Helper()
	out := map[string]forge.Issue{}
	for _, is := range r.issues() {
		if is.Author == r.bot.Login {
			if _, dup := out[is.Title]; dup {
				r.t.Fatalf("two issues titled %q", is.Title)
			}
			out[is.Title] = is
		}
	}
	return out
}

// get re-reads issue n.
func (r *rig) get(n int64) forge.Issue {
	r.t.Helper()
	is, err := r.proj.GetIssue(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return is
}

// close closes issue n as the owner.
func (r *rig) close(n int64) {
	r.t.Helper()
	if err := r.proj.CloseIssue(ctxOf(r.t), n); err != nil {
		r.t.Fatal(err)
	}
}

// opsComments returns the comments of ops pull request n.
func (r *rig) opsComments(n int64) []forge.Comment {
	r.t.Helper()
	cs, err := r.ops.ListComments(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// comments returns the comments of project issue n.
func (r *rig) comments(n int64) []forge.Comment {
	r.t.Helper()
	cs, err := r.proj.ListComments(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// records returns the ledger records with code.
func (r *rig) records(code ledger.Code) []ledger.Record {
	var out []ledger.Record
	for _, rec := range r.led.Records() {
		if rec.Code == code {
			out = append(out, rec)
		}
	}
	return out
}

// sprintFile renders a sprint file for vision v with a filer block.
func sprintFile(name string, v int64, block string) string {
	return fmt.Sprintf("# Sprint: %s\n\n## Vision issues\n- #%d — %s\n\n## What this enables\nMore.\n\n## Sub-issues\n%s\n%s%s\n",
		name, v, name, forge.FilerBegin, block, forge.FilerEnd)
}

// billingBlock is the block of spec 50 §6.10: schema, and api after it.
func billingBlock(v int64) string {
	return fmt.Sprintf(`- id: schema
  title: vision(#%d): billing schema
  labels: [backlog]
  depends_on: []
  body: |
    ## Goal
    The tables.

    ## Acceptance criteria
    - [ ] migrations run
- id: api
  title: "Use \"strict\" mode"
  labels: [backlog]
  depends_on: [schema]
  body: |
    ## Goal
    The API.
`, v)
}

// countingForge cancels its context after n issues are created: the
// filer killed in the middle of a sprint.
type countingForge struct {
	filer.ProjectForge
	n       int
	created atomic.Int64
	cancel  context.CancelFunc
}

func (c *countingForge) CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error) {
	is, err := c.ProjectForge.CreateIssue(ctx, in)
	if err == nil && int(c.created.Add(1)) >= c.n {
		c.cancel()
	}
	return is, err
}

// listCounter counts the passes that read the project's issues.
type listCounter struct {
	filer.ProjectForge
	lists atomic.Int64
}

func (c *listCounter) ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error) {
	c.lists.Add(1)
	return c.ProjectForge.ListIssues(ctx, q)
}

// runAs is one pass with cause, on proj.
func (r *rig) runAs(cause agent.Cause, proj filer.ProjectForge) {
	r.t.Helper()
	if err := r.rt.Tick(ctxOf(r.t), r.agent(proj), r.project, config.RoleFiler, cause); err != nil {
		r.t.Fatalf("filer pass (%s): %v", cause, err)
	}
}
