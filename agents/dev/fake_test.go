package dev

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// fakeForge is an in-memory forge for unit tests of the state machine.
type fakeForge struct {
	mu       sync.Mutex
	me       string
	next     int64
	issues   map[int64]*forge.Issue
	comments map[int64][]forge.Comment
	pulls    map[int64]*forge.PullRequest
	reviews  map[int64][]forge.Review
	status   map[string]forge.CombinedStatus
	calls    map[string]int
	now      time.Time
	// claimErr, when set, is returned by Claim.
	claimErr error
	// failPulls makes the next CreatePull calls fail as unavailable.
	failPulls int
	g         *fakeGit
}

var _ forgeAPI = (*fakeForge)(nil)

func newFakeForge(me string) *fakeForge {
	return &fakeForge{me: me, issues: map[int64]*forge.Issue{}, comments: map[int64][]forge.Comment{},
		pulls: map[int64]*forge.PullRequest{}, reviews: map[int64][]forge.Review{},
		status: map[string]forge.CombinedStatus{}, calls: map[string]int{}, now: time.Unix(1_700_000_000, 0)}
}

func (f *fakeForge) call(name string) {
	f.mu.Lock()
	f.calls[name]++
	f.mu.Unlock()
}

func (f *fakeForge) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func (f *fakeForge) resetCalls() {
	f.mu.Lock()
	f.calls = map[string]int{}
	f.mu.Unlock()
}

func (f *fakeForge) addIssue(title, body string, labels ...forge.LabelName) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.issues[f.next] = &forge.Issue{Number: f.next, Title: title, Body: body, State: forge.StateOpen,
		Labels: labels, Created: f.now, Updated: f.now}
	return f.next
}

func (f *fakeForge) issue(n int64) forge.Issue {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := *f.issues[n]
	i.Labels = append([]forge.LabelName(nil), i.Labels...)
	return i
}

func (f *fakeForge) pull(n int64) forge.PullRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.pulls[n]
}

func (f *fakeForge) commentsOf(n int64) []forge.Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forge.Comment(nil), f.comments[n]...)
}

func (f *fakeForge) setStatus(sha string, st forge.CIState, desc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[sha] = forge.CombinedStatus{SHA: sha, State: st, Statuses: []forge.CommitStatus{
		{Context: "ci/test", State: st, Description: desc, TargetURL: "http://ci.invalid/pipeline/7"}}}
}

func (f *fakeForge) review(pr int64, author string, ev forge.ReviewEvent, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.now = f.now.Add(time.Second)
	f.reviews[pr] = append(f.reviews[pr], forge.Review{ID: f.next, State: ev, Body: body,
		CommitID: f.pulls[pr].HeadSHA, Author: author, Submitted: f.now})
}

func (f *fakeForge) Me(context.Context) (forge.User, error) {
	f.call("me")
	return forge.User{Login: f.me}, nil
}

func (f *fakeForge) ListIssues(_ context.Context, q forge.IssueQuery) ([]forge.Issue, error) {
	f.call("list_issues")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forge.Issue
	for _, i := range f.issues {
		if q.State == "" || q.State == forge.StateAll || i.State == q.State {
			c := *i
			c.Labels = append([]forge.LabelName(nil), i.Labels...)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(x, y int) bool { return out[x].Number > out[y].Number })
	return out, nil
}

func (f *fakeForge) GetIssue(_ context.Context, n int64) (forge.Issue, error) {
	f.call("get_issue")
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.issues[n]
	if !ok {
		return forge.Issue{}, fmt.Errorf("issue %d: %w", n, forge.ErrNotFound)
	}
	return *i, nil
}

func (f *fakeForge) ListComments(_ context.Context, n int64) ([]forge.Comment, error) {
	f.call("list_comments")
	return f.commentsOf(n), nil
}

func (f *fakeForge) CreateComment(_ context.Context, n int64, body string) (forge.Comment, error) {
	f.call("create_comment")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.now = f.now.Add(time.Second)
	c := forge.Comment{ID: f.next, Body: body, Author: f.me, Created: f.now}
	f.comments[n] = append(f.comments[n], c)
	return c, nil
}

func (f *fakeForge) AddLabels(_ context.Context, n int64, names ...forge.LabelName) error {
	f.call("add_labels")
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.issues[n]
	for _, l := range names {
		if !i.HasLabel(l) {
			i.Labels = append(i.Labels, l)
		}
	}
	return nil
}

func (f *fakeForge) RemoveLabels(_ context.Context, n int64, names ...forge.LabelName) error {
	f.call("remove_labels")
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.issues[n]
	var keep []forge.LabelName
	for _, l := range i.Labels {
		drop := false
		for _, r := range names {
			drop = drop || l == r
		}
		if !drop {
			keep = append(keep, l)
		}
	}
	i.Labels = keep
	return nil
}

func (f *fakeForge) SetAssignees(_ context.Context, n int64, logins []string) error {
	f.call("set_assignees")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues[n].Assignees = append([]string(nil), logins...)
	return nil
}

func (f *fakeForge) CloseIssue(_ context.Context, n int64) error {
	f.call("close_issue")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues[n].State = forge.StateClosed
	return nil
}

func (f *fakeForge) Claim(_ context.Context, n int64) (forge.Claim, error) {
	f.call("claim")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimErr != nil {
		return forge.Claim{}, f.claimErr
	}
	i := f.issues[n]
	if len(i.Assignees) > 0 {
		return forge.Claim{}, forge.ErrClaimed
	}
	i.Assignees = []string{f.me}
	i.Labels = append(i.Labels, forge.LabelInProgress)
	var keep []forge.LabelName
	for _, l := range i.Labels {
		if l != forge.LabelBacklog {
			keep = append(keep, l)
		}
	}
	i.Labels = keep
	return forge.Claim{Issue: n, Login: f.me}, nil
}

func (f *fakeForge) ListPulls(_ context.Context, state forge.State) ([]forge.PullRequest, error) {
	f.call("list_pulls")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forge.PullRequest
	for _, p := range f.pulls {
		if state == forge.StateAll || p.State == state || (state == "" && p.State == forge.StateOpen) {
			out = append(out, *p)
		}
	}
	sort.Slice(out, func(x, y int) bool { return out[x].Number > out[y].Number })
	return out, nil
}

func (f *fakeForge) GetPull(_ context.Context, n int64) (forge.PullRequest, error) {
	f.call("get_pull")
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pulls[n]
	if !ok {
		return forge.PullRequest{}, fmt.Errorf("pull %d: %w", n, forge.ErrNotFound)
	}
	return *p, nil
}

func (f *fakeForge) CreatePull(_ context.Context, in forge.NewPull) (forge.PullRequest, error) {
	f.call("create_pull")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPulls > 0 {
		f.failPulls--
		return forge.PullRequest{}, forge.ErrUnavailable
	}
	for _, p := range f.pulls {
		if p.Head == in.Head && p.State == forge.StateOpen {
			return forge.PullRequest{}, forge.ErrConflict
		}
	}
	f.next++
	p := &forge.PullRequest{Number: f.next, Title: in.Title, Body: in.Body, State: forge.StateOpen,
		Head: in.Head, Base: in.Base, Author: f.me}
	if f.g != nil {
		p.HeadSHA = f.g.remoteHead(in.Head)
	}
	f.pulls[f.next] = p
	return *p, nil
}

// syncHeads copies the fake remote's branch heads into open pull requests,
// as the forge does on push.
func (f *fakeForge) syncHeads(g *fakeGit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pulls {
		if p.State == forge.StateOpen {
			if sha := g.remoteHead(p.Head); sha != "" {
				p.HeadSHA = sha
			}
		}
	}
}

func (f *fakeForge) ListReviews(_ context.Context, n int64) ([]forge.Review, error) {
	f.call("list_reviews")
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forge.Review(nil), f.reviews[n]...), nil
}

func (f *fakeForge) CombinedStatus(_ context.Context, sha string) (forge.CombinedStatus, error) {
	f.call("combined_status")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[sha], nil
}

func (f *fakeForge) Merge(_ context.Context, n int64, opts forge.MergeOptions) error {
	f.call("merge")
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pulls[n]
	switch {
	case p.Merged:
		return forge.ErrAlreadyMerged
	case p.HeadSHA != opts.HeadSHA:
		return forge.ErrHeadMoved
	}
	p.Merged, p.State, p.MergedSHA = true, forge.StateClosed, "merge-"+p.HeadSHA
	return nil
}

// fakeGit simulates the clone, worktrees and the remote.
type fakeGit struct {
	mu      sync.Mutex
	f       *fakeForge
	seq     int
	head    map[string]string // worktree dir → HEAD
	ahead   map[string]int
	remote  map[string]string // branch → sha
	removed []string
	mirrors []string
}

var _ gitOps = (*fakeGit)(nil)

func newFakeGit(f *fakeForge) *fakeGit {
	g := &fakeGit{f: f, head: map[string]string{}, ahead: map[string]int{}, remote: map[string]string{}}
	f.mu.Lock()
	f.g = g
	f.mu.Unlock()
	return g
}

func (g *fakeGit) remoteHead(branch string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.remote[branch]
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

// push simulates the model's own push of dir to branch.
func (g *fakeGit) push(dir, branch string) {
	g.mu.Lock()
	g.remote[branch] = g.head[dir]
	g.mu.Unlock()
	g.f.syncHeads(g)
}

func (g *fakeGit) Worktree(_ context.Context, dir, branch string) error {
	return os.MkdirAll(dir, 0o750)
}

func (g *fakeGit) RemoteHead(_ context.Context, branch string) (string, error) {
	return g.remoteHead(branch), nil
}

func (g *fakeGit) Head(_ context.Context, dir string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.head[dir], nil
}

func (g *fakeGit) Ahead(_ context.Context, dir string) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ahead[dir], nil
}

func (g *fakeGit) Push(_ context.Context, dir, branch string) error {
	g.push(dir, branch)
	return nil
}

func (g *fakeGit) EmptyCommit(_ context.Context, dir, _ string) error {
	g.commit(dir)
	return nil
}

func (g *fakeGit) RemoveWorktree(_ context.Context, dir string) error {
	g.mu.Lock()
	g.removed = append(g.removed, dir)
	g.mu.Unlock()
	return os.RemoveAll(dir)
}

func (g *fakeGit) PushMirror(_ context.Context, name, _, sha string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mirrors = append(g.mirrors, name+"="+sha)
	return nil
}

func (g *fakeGit) SessionEnv() map[string]string {
	return map[string]string{"DISINTO_GIT_USER": "dev-bot"}
}
