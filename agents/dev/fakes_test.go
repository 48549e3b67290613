package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox"
)

// world is the forge of a unit test: lib/forge/forgefake with the dev bot's
// handle (what the agent uses) and the owner's (humans and CI).
type world struct {
	t     *testing.T
	fake  *forgefake.Forge
	bot   *forgefake.Repo
	owner *forgefake.Repo
}

func newWorld(t *testing.T, now func() time.Time) *world {
	t.Helper()
	fk := forgefake.New(now)
	w := &world{t: t, fake: fk, bot: fk.Repo("owner", "proj", bot), owner: fk.Repo("owner", "proj", "owner")}
	if _, err := w.owner.EnsureLabels(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) addIssue(title, body string, labels ...forge.LabelName) int64 {
	w.t.Helper()
	i, err := w.owner.CreateIssue(w.t.Context(), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		w.t.Fatal(err)
	}
	return i.Number
}

func (w *world) issue(n int64) forge.Issue {
	w.t.Helper()
	i, err := w.owner.GetIssue(w.t.Context(), n)
	if err != nil {
		w.t.Fatal(err)
	}
	return i
}

func (w *world) pull(n int64) forge.PullRequest {
	w.t.Helper()
	p, err := w.owner.GetPull(w.t.Context(), n)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// pulls returns every pull request, in any state.
func (w *world) pulls() []forge.PullRequest {
	w.t.Helper()
	ps, err := w.owner.ListPulls(w.t.Context(), forge.StateAll)
	if err != nil {
		w.t.Fatal(err)
	}
	return ps
}

func (w *world) commentsOf(n int64) []forge.Comment {
	w.t.Helper()
	cs, err := w.owner.ListComments(w.t.Context(), n)
	if err != nil {
		w.t.Fatal(err)
	}
	return cs
}

// setStatus posts the CI status of sha.
func (w *world) setStatus(sha string, st forge.CIState, desc string) {
	w.t.Helper()
	if err := w.owner.CreateStatus(w.t.Context(), sha, forge.CommitStatus{
		Context: "ci/test", State: st, Description: desc, TargetURL: "http://ci.invalid/pipeline/7"}); err != nil {
		w.t.Fatal(err)
	}
}

// review submits a formal review by author on the pull request's head.
func (w *world) review(pr int64, author string, ev forge.ReviewEvent, body string) {
	w.t.Helper()
	if _, err := w.fake.Repo("owner", "proj", author).CreateReview(w.t.Context(), pr, forge.NewReview{Event: ev, Body: body}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) assign(n int64, logins ...string) {
	w.t.Helper()
	if err := w.owner.SetAssignees(w.t.Context(), n, logins); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) close(n int64) {
	w.t.Helper()
	if err := w.owner.CloseIssue(w.t.Context(), n); err != nil {
		w.t.Fatal(err)
	}
}

// callsSince returns the forge calls made after the snapshot before.
func (w *world) callsSince(before map[string]int) (map[string]int, int) {
	out, total := map[string]int{}, 0
	for op, n := range w.fake.Calls() {
		if d := n - before[op]; d > 0 {
			out[op] = d
			total += d
		}
	}
	return out, total
}

// fakeGit simulates the clone and worktrees; pushes move branches of the
// fake forge to the exact commit.
type fakeGit struct {
	mu    sync.Mutex
	repo  *forgefake.Repo
	seq   int
	head  map[string]string // worktree dir → HEAD
	ahead map[string]int
	// behind is what Behind reports for every branch.
	behind bool
	// worktreeErr is what Worktree fails with, when set.
	worktreeErr error
	// collectErr is what Collect fails with, when set.
	collectErr error
	// rebaseConflict makes Rebase stop on a conflict; rebases counts the
	// calls of Rebase.
	rebaseConflict bool
	rebases        int
	// rebaseErr is what the next Rebase fails with, when set.
	rebaseErr error
	// pushed holds every branch a push made.
	pushed map[string]bool
	// files and held simulate what commits change and the held refs
	// (autonomy_fakes_test.go).
	files fakeFiles
}

var _ gitOps = (*fakeGit)(nil)

func newFakeGit(repo *forgefake.Repo) *fakeGit {
	return &fakeGit{repo: repo, head: map[string]string{}, ahead: map[string]int{}, pushed: map[string]bool{}}
}

// commit simulates a commit in dir (what the model does).
func (g *fakeGit) commit(dir string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	sha := fmt.Sprintf("%040d", g.seq)
	g.head[dir] = sha
	g.ahead[dir]++
	return sha
}

// pushHead simulates a push of dir's HEAD to branch (by someone else than
// the agent, which pushes what Collect returns).
func (g *fakeGit) pushHead(dir, branch string) error {
	g.mu.Lock()
	sha := g.head[dir]
	g.mu.Unlock()
	return g.pushSHA(sha, branch)
}

// pushSHA simulates a push of commit sha to branch.
func (g *fakeGit) pushSHA(sha, branch string) error {
	ctx := context.Background()
	// forgefake.Repo.Push mints its own SHA; recreating the branch keeps
	// the commit's.
	if err := g.repo.DeleteBranch(ctx, branch); err != nil {
		return err
	}
	_, err := g.repo.CreateBranch(ctx, branch, sha)
	g.mu.Lock()
	g.pushed[branch] = true
	g.mu.Unlock()
	return err
}

// Rebase simulates the agent's own rebase: a conflict when rebaseConflict
// is set, else a new head pushed to branch, which is then up to date.
func (g *fakeGit) Rebase(_ context.Context, branch string) (string, error) {
	g.mu.Lock()
	g.rebases++
	if err := g.rebaseErr; err != nil {
		g.rebaseErr = nil
		g.mu.Unlock()
		return "", err
	}
	if g.rebaseConflict {
		g.mu.Unlock()
		return "", fmt.Errorf("rebase %s onto origin/main: %w in README.md", branch, git.ErrConflict)
	}
	g.seq++
	sha := fmt.Sprintf("%040d", g.seq)
	g.behind = false
	g.mu.Unlock()
	return sha, g.pushSHA(sha, branch)
}

func (g *fakeGit) setRebaseConflict(c bool) {
	g.mu.Lock()
	g.rebaseConflict = c
	g.mu.Unlock()
}

// RemoteBranches lists the branches pushed that still exist on the forge.
func (g *fakeGit) RemoteBranches(ctx context.Context, prefix string) (map[string]string, error) {
	g.mu.Lock()
	var names []string
	for b := range g.pushed {
		names = append(names, b)
	}
	g.mu.Unlock()
	out := map[string]string{}
	for _, b := range names {
		if !strings.HasPrefix(b, prefix) {
			continue
		}
		br, err := g.repo.GetBranch(ctx, b)
		if errors.Is(err, forge.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[b] = br.SHA
	}
	return out, nil
}

func (g *fakeGit) Prepare(_ context.Context, ws *sandbox.Workspace, _ string) error {
	g.mu.Lock()
	err := g.worktreeErr
	g.mu.Unlock()
	if err != nil {
		return err
	}
	return os.MkdirAll(ws.Repo(), 0o750)
}

func (g *fakeGit) RemoteHead(ctx context.Context, branch string) (string, error) {
	b, err := g.repo.GetBranch(ctx, branch)
	if errors.Is(err, forge.ErrNotFound) {
		return "", nil
	}
	return b.SHA, err
}

func (g *fakeGit) Collect(_ context.Context, ws *sandbox.Workspace, _ string) (string, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.collectErr != nil {
		return "", 0, g.collectErr
	}
	return g.head[ws.Repo()], g.ahead[ws.Repo()], nil
}

func (g *fakeGit) Behind(context.Context, string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.behind, nil
}

func (g *fakeGit) setBehind(b bool) {
	g.mu.Lock()
	g.behind = b
	g.mu.Unlock()
}

func (g *fakeGit) Push(_ context.Context, sha, branch string) error { return g.pushSHA(sha, branch) }

func (g *fakeGit) EmptyCommit(_ context.Context, branch, _ string) (string, error) {
	g.mu.Lock()
	g.seq++
	sha := fmt.Sprintf("%040d", g.seq)
	g.mu.Unlock()
	return sha, g.pushSHA(sha, branch)
}

func (g *fakeGit) PrimaryFS(context.Context) (fs.FS, error) { return fstest.MapFS{}, nil }
