package forgefake

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/disinto/disinto/lib/forge"
)

// Repo is a handle on one repository acting as one user; it has the method
// set of forge.RepoClient that agents use.
type Repo struct {
	f     *Forge
	slug  string
	owner string
	name  string
	login string
}

// Slug returns "owner/name".
func (r *Repo) Slug() string { return r.slug }

// Owner returns the repository owner.
func (r *Repo) Owner() string { return r.owner }

// Name returns the repository name.
func (r *Repo) Name() string { return r.name }

// Login returns the identity the handle acts as.
func (r *Repo) Login() string { return r.login }

func (r *Repo) st() *repo { return r.f.repos[r.slug] }

// Me returns the acting user.
func (r *Repo) Me(ctx context.Context) (forge.User, error) {
	if err := r.f.enter("Me"); err != nil {
		return forge.User{}, err
	}
	defer r.f.mu.Unlock()
	return r.f.user(r.login), nil
}

func cloneIssue(i *issue) forge.Issue {
	out := i.Issue
	out.Labels = slices.Clone(i.Labels)
	out.Assignees = slices.Clone(i.Assignees)
	return out
}

// ListIssues returns issues (not pull requests) matching q, newest first.
func (r *Repo) ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error) {
	if err := r.f.enter("ListIssues"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	state := q.State
	if state == "" {
		state = forge.StateOpen
	}
	var out []forge.Issue
	for _, i := range r.st().issues {
		if i.pull != nil || (state != forge.StateAll && i.State != state) {
			continue
		}
		if q.Assignee != "" && !i.AssignedTo(q.Assignee) {
			continue
		}
		if !q.Since.IsZero() && i.Updated.Before(q.Since) {
			continue
		}
		ok := true
		for _, l := range q.Labels {
			ok = ok && i.HasLabel(l)
		}
		if ok {
			out = append(out, cloneIssue(i))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Number > out[b].Number })
	return out, nil
}

func (r *Repo) issue(n int64) (*issue, error) {
	i, ok := r.st().issues[n]
	if !ok {
		return nil, notFound("issue %s#%d", r.slug, n)
	}
	return i, nil
}

// GetIssue returns issue or pull request n as an issue.
func (r *Repo) GetIssue(ctx context.Context, n int64) (forge.Issue, error) {
	if err := r.f.enter("GetIssue"); err != nil {
		return forge.Issue{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return forge.Issue{}, err
	}
	return cloneIssue(i), nil
}

// CreateIssue opens an issue; labels must exist.
func (r *Repo) CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error) {
	if err := r.f.enter("CreateIssue"); err != nil {
		return forge.Issue{}, err
	}
	defer r.f.mu.Unlock()
	if err := r.checkLabels(in.Labels); err != nil {
		return forge.Issue{}, err
	}
	i := r.newIssue(in.Title, in.Body)
	i.Assignees = slices.Clone(in.Assignees)
	r.applied(i, in.Labels, true)
	return cloneIssue(i), nil
}

func (r *Repo) newIssue(title, body string) *issue {
	s := r.st()
	now := r.f.now()
	i := &issue{Issue: forge.Issue{
		Number: s.next, Title: title, Body: body, State: forge.StateOpen, Author: r.login, AuthorID: r.f.user(r.login).ID,
		Created: now, Updated: now, URL: fmt.Sprintf("fake://%s/issues/%d", r.slug, s.next),
	}}
	s.issues[s.next] = i
	s.next++
	return i
}

// EditIssue applies e to issue n.
func (r *Repo) EditIssue(ctx context.Context, n int64, e forge.IssueEdit) (forge.Issue, error) {
	if err := r.f.enter("EditIssue"); err != nil {
		return forge.Issue{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return forge.Issue{}, err
	}
	if e.Title != nil {
		i.Title = *e.Title
	}
	if e.Body != nil {
		i.Body = *e.Body
	}
	if e.State != nil {
		i.State = *e.State
	}
	i.Updated = r.f.now()
	return cloneIssue(i), nil
}

// CloseIssue closes issue n.
func (r *Repo) CloseIssue(ctx context.Context, n int64) error {
	st := forge.StateClosed
	_, err := r.EditIssue(ctx, n, forge.IssueEdit{State: &st})
	return err
}

// SetAssignees replaces the assignees of issue n.
func (r *Repo) SetAssignees(ctx context.Context, n int64, logins []string) error {
	if err := r.f.enter("SetAssignees"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return err
	}
	i.Assignees = slices.Clone(logins)
	i.Updated = r.f.now()
	return nil
}

// ListComments returns the comments of n, oldest first.
func (r *Repo) ListComments(ctx context.Context, n int64) ([]forge.Comment, error) {
	if err := r.f.enter("ListComments"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	if _, err := r.issue(n); err != nil {
		return nil, err
	}
	var out []forge.Comment
	for _, c := range r.st().comments {
		if c.issue == n {
			out = append(out, c.Comment)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// CreateComment posts body on n.
func (r *Repo) CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error) {
	if err := r.f.enter("CreateComment"); err != nil {
		return forge.Comment{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return forge.Comment{}, err
	}
	now := r.f.now()
	c := &comment{Comment: forge.Comment{ID: r.f.newID(), Body: body, Author: r.login, AuthorID: r.f.user(r.login).ID, Created: now, Updated: now}, issue: n}
	r.st().comments[c.ID] = c
	i.Updated = now
	return c.Comment, nil
}

// EditComment replaces the body of comment id.
func (r *Repo) EditComment(ctx context.Context, id int64, body string) (forge.Comment, error) {
	if err := r.f.enter("EditComment"); err != nil {
		return forge.Comment{}, err
	}
	defer r.f.mu.Unlock()
	c, ok := r.st().comments[id]
	if !ok {
		return forge.Comment{}, notFound("comment %d in %s", id, r.slug)
	}
	c.Body, c.Updated = body, r.f.now()
	return c.Comment, nil
}

// DeleteComment deletes comment id.
func (r *Repo) DeleteComment(ctx context.Context, id int64) error {
	if err := r.f.enter("DeleteComment"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	if _, ok := r.st().comments[id]; !ok {
		return notFound("comment %d in %s", id, r.slug)
	}
	delete(r.st().comments, id)
	return nil
}
