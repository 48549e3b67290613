package forge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
)

// IssueQuery filters ListIssues server-side. Zero fields do not filter.
type IssueQuery struct {
	// State defaults to open.
	State State
	// Labels keeps issues carrying all of these labels.
	Labels []LabelName
	// Assignee keeps issues assigned to this login.
	Assignee string
	// Since keeps issues updated at or after this time.
	Since time.Time
}

// ListIssues returns every issue (not pull request) matching q, all pages,
// but the factory's dashboard: an issue whose body begins with its marker
// is no work item for any role (whoever pasted the marker into an issue
// of their own only hides it from the factory).
func (r *RepoClient) ListIssues(ctx context.Context, q IssueQuery) ([]Issue, error) {
	state := q.State
	if state == "" {
		state = StateOpen
	}
	labels := make([]string, 0, len(q.Labels))
	for _, l := range q.Labels {
		labels = append(labels, string(l))
	}
	api := r.c.api(ctx)
	out, err := paginate(func(page int) ([]Issue, *gitea.Response, error) {
		is, resp, err := api.ListRepoIssues(r.owner, r.name, gitea.ListIssueOption{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
			State:       gitea.StateType(state),
			Type:        gitea.IssueTypeIssue,
			Labels:      labels,
			AssignedBy:  q.Assignee,
			Since:       q.Since,
		})
		if err := r.c.check("list issues "+r.slug, resp, err); err != nil {
			return nil, resp, err
		}
		res := make([]Issue, 0, len(is))
		for _, i := range is {
			res = append(res, toIssue(i))
		}
		return res, resp, nil
	})
	return slices.DeleteFunc(out, IsDashboard), err
}

// IsDashboard says whether i is a factory dashboard: its body begins with
// the dashboard marker.
func IsDashboard(i Issue) bool {
	return strings.HasPrefix(i.Body, "<!-- disinto:"+MarkerDashboard+" ")
}

// GetIssue returns issue number n.
func (r *RepoClient) GetIssue(ctx context.Context, n int64) (Issue, error) {
	i, resp, err := r.c.api(ctx).GetIssue(r.owner, r.name, n)
	if err := r.c.check(fmt.Sprintf("get issue %s#%d", r.slug, n), resp, err); err != nil {
		return Issue{}, err
	}
	return toIssue(i), nil
}

// NewIssue describes an issue to create.
type NewIssue struct {
	Title     string
	Body      string
	Labels    []LabelName
	Assignees []string
}

// CreateIssue opens an issue; labels must exist (see EnsureLabels). If the
// issue was created but its labels could not be applied, the issue is
// returned with the error, so the caller does not create it twice.
func (r *RepoClient) CreateIssue(ctx context.Context, in NewIssue) (Issue, error) {
	ids, err := r.labelIDs(ctx, in.Labels)
	if err != nil {
		return Issue{}, err
	}
	i, resp, err := r.c.api(ctx).CreateIssue(r.owner, r.name, gitea.CreateIssueOption{
		Title: r.c.text(in.Title), Body: r.c.text(in.Body), Labels: ids, Assignees: in.Assignees,
	})
	if err := r.c.check("create issue in "+r.slug, resp, err); err != nil {
		return Issue{}, err
	}
	// The forge skips label ids it does not know (a label recreated since
	// its id was cached); add what is missing by looking the ids up again.
	if missing := missingLabels(in.Labels, i.Labels); len(missing) > 0 {
		if err := r.AddLabels(ctx, i.Index, missing...); err != nil {
			return toIssue(i), fmt.Errorf("create issue in %s: labels: %w", r.slug, err)
		}
		return r.GetIssue(ctx, i.Index)
	}
	return toIssue(i), nil
}

// IssueEdit changes the non-nil fields of an issue.
type IssueEdit struct {
	Title *string
	Body  *string
	State *State
}

// EditIssue applies e to issue n and returns the result.
func (r *RepoClient) EditIssue(ctx context.Context, n int64, e IssueEdit) (Issue, error) {
	opt := gitea.EditIssueOption{}
	if e.Body != nil {
		body := r.c.text(*e.Body)
		opt.Body = &body
	}
	if e.Title != nil {
		opt.Title = r.c.text(*e.Title)
	}
	if e.State != nil {
		st := gitea.StateType(*e.State)
		opt.State = &st
	}
	i, resp, err := r.c.api(ctx).EditIssue(r.owner, r.name, n, opt)
	if err := r.c.check(fmt.Sprintf("edit issue %s#%d", r.slug, n), resp, err); err != nil {
		return Issue{}, err
	}
	return toIssue(i), nil
}

// PinIssue pins issue n to the top of the repository's issue list.
func (r *RepoClient) PinIssue(ctx context.Context, n int64) error {
	resp, err := r.c.api(ctx).PinIssue(r.owner, r.name, n)
	return r.c.check(fmt.Sprintf("pin issue %s#%d", r.slug, n), resp, err)
}

// CloseIssue closes issue n.
func (r *RepoClient) CloseIssue(ctx context.Context, n int64) error {
	st := StateClosed
	_, err := r.EditIssue(ctx, n, IssueEdit{State: &st})
	return err
}

// SetAssignees replaces the assignees of issue n (empty clears them).
func (r *RepoClient) SetAssignees(ctx context.Context, n int64, logins []string) error {
	if logins == nil {
		logins = []string{}
	}
	body := map[string]any{"assignees": logins}
	if err := r.c.do(ctx, "PATCH", r.path("/issues/%d", n), nil, body, nil); err != nil {
		return fmt.Errorf("set assignees %s#%d: %w", r.slug, n, err)
	}
	return nil
}

// ListComments returns all comments of issue or pull request n, oldest
// first. Gitea and Forgejo return every comment in one response (the
// endpoint has no paging), so this is always one request.
func (r *RepoClient) ListComments(ctx context.Context, n int64) ([]Comment, error) {
	cs, resp, err := r.c.api(ctx).ListIssueComments(r.owner, r.name, n, gitea.ListIssueCommentOptions{
		ListOptions: gitea.ListOptions{Page: -1},
	})
	if err := r.c.check(fmt.Sprintf("list comments %s#%d", r.slug, n), resp, err); err != nil {
		return nil, err
	}
	res := make([]Comment, 0, len(cs))
	for _, c := range cs {
		res = append(res, toComment(c))
	}
	return res, nil
}

// CreateComment posts body on issue or pull request n.
func (r *RepoClient) CreateComment(ctx context.Context, n int64, body string) (Comment, error) {
	c, resp, err := r.c.api(ctx).CreateIssueComment(r.owner, r.name, n, gitea.CreateIssueCommentOption{Body: r.c.text(body)})
	if err := r.c.check(fmt.Sprintf("comment on %s#%d", r.slug, n), resp, err); err != nil {
		return Comment{}, err
	}
	return toComment(c), nil
}

// EditComment replaces the body of comment id.
func (r *RepoClient) EditComment(ctx context.Context, id int64, body string) (Comment, error) {
	c, resp, err := r.c.api(ctx).EditIssueComment(r.owner, r.name, id, gitea.EditIssueCommentOption{Body: r.c.text(body)})
	if err := r.c.check(fmt.Sprintf("edit comment %d in %s", id, r.slug), resp, err); err != nil {
		return Comment{}, err
	}
	return toComment(c), nil
}
