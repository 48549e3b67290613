package forge

import (
	"time"

	"code.gitea.io/sdk/gitea"
)

// State is the open/closed state of an issue or pull request.
type State string

// Issue and pull request states.
const (
	StateOpen   State = "open"
	StateClosed State = "closed"
	StateAll    State = "all"
)

// User is a forge account or organisation.
type User struct {
	ID      int64
	Login   string
	Email   string
	IsAdmin bool
}

// Issue is a forge issue (pull requests are listed separately).
type Issue struct {
	Number    int64
	Title     string
	Body      string
	State     State
	Labels    []LabelName
	Assignees []string
	Author    string
	Created   time.Time
	Updated   time.Time
	URL       string

	// AuthorID is the author's user id: a login can change hands, an id
	// cannot, so trust is decided by it.
	AuthorID int64
}

// HasLabel reports whether the issue carries name.
func (i Issue) HasLabel(name LabelName) bool {
	for _, l := range i.Labels {
		if l == name {
			return true
		}
	}
	return false
}

// AssignedTo reports whether login is among the assignees.
func (i Issue) AssignedTo(login string) bool {
	for _, a := range i.Assignees {
		if a == login {
			return true
		}
	}
	return false
}

// Comment is an issue or pull request comment.
type Comment struct {
	ID     int64
	Body   string
	Author string
	// AuthorID is the author's user id (see Issue.AuthorID).
	AuthorID int64
	Created  time.Time
	Updated  time.Time
}

// PullRequest is a forge pull request.
type PullRequest struct {
	Number    int64
	Title     string
	Body      string
	State     State
	Head      string // head branch name
	HeadSHA   string
	Base      string // base branch name
	Merged    bool
	MergedSHA string
	// MergedAt is when it was merged, ClosedAt when it was closed (merged
	// or not); zero while open.
	MergedAt  time.Time
	ClosedAt  time.Time
	Mergeable bool
	Author    string
	Labels    []LabelName
	URL       string
	Updated   time.Time
	// HeadRepo is the full name (owner/name) of the repository holding the
	// head branch; empty when the forge no longer knows it.
	HeadRepo string
	// FromFork reports that the head branch is not in the base repository
	// (a fork, or a repository since deleted), so its name proves nothing
	// about who owns the work.
	FromFork bool

	// AuthorID is the author's user id (see Issue.AuthorID).
	AuthorID int64
}

// ReviewEvent is the verdict of a formal review.
type ReviewEvent string

// Review events as the API names them.
const (
	ReviewApprove        ReviewEvent = "APPROVED"
	ReviewRequestChanges ReviewEvent = "REQUEST_CHANGES"
	ReviewComment        ReviewEvent = "COMMENT"
)

// Review is a formal pull request review.
type Review struct {
	ID        int64
	State     ReviewEvent
	Body      string
	CommitID  string
	Author    string
	Dismissed bool
	// Stale is the forge's flag for reviews of an older head. Forges set it
	// asynchronously after a push; compare CommitID with the head SHA for
	// a definitive answer.
	Stale     bool
	Submitted time.Time
}

// CIState is a commit status state.
type CIState string

// Commit status states.
const (
	CIPending CIState = "pending"
	CISuccess CIState = "success"
	CIError   CIState = "error"
	CIFailure CIState = "failure"
	CIWarning CIState = "warning"
)

// CommitStatus is one CI context's status on a commit.
type CommitStatus struct {
	Context     string
	State       CIState
	Description string
	TargetURL   string
	// Updated is when the forge last changed the status (read only).
	Updated time.Time
}

// CombinedStatus is the combined CI state of a commit. State is empty when
// no status was posted.
type CombinedStatus struct {
	SHA      string
	State    CIState
	Statuses []CommitStatus
}

// Repo is a repository.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	FullName      string
	DefaultBranch string
	Private       bool
	CloneURL      string
	Empty         bool
}

// Branch is a branch and its head commit.
type Branch struct {
	Name string
	SHA  string
}

// File is a file's content at a ref, with the blob SHA needed to update it.
type File struct {
	Path    string
	SHA     string
	Content []byte
}

// Webhook is a repository webhook.
type Webhook struct {
	ID     int64
	URL    string
	Events []string
	Active bool
}

func login(u *gitea.User) string {
	if u == nil {
		return ""
	}
	return u.UserName
}

func userID(u *gitea.User) int64 {
	if u == nil {
		return 0
	}
	return u.ID
}

func toUser(u *gitea.User) User {
	if u == nil {
		return User{}
	}
	return User{ID: u.ID, Login: u.UserName, Email: u.Email, IsAdmin: u.IsAdmin}
}

func labelNames(ls []*gitea.Label) []LabelName {
	out := make([]LabelName, 0, len(ls))
	for _, l := range ls {
		out = append(out, LabelName(l.Name))
	}
	return out
}

func toIssue(i *gitea.Issue) Issue {
	out := Issue{
		Number: i.Index, Title: i.Title, Body: i.Body, State: State(i.State),
		Labels: labelNames(i.Labels), Author: login(i.Poster), AuthorID: userID(i.Poster),
		Created: i.Created, Updated: i.Updated, URL: i.HTMLURL,
	}
	for _, a := range i.Assignees {
		out.Assignees = append(out.Assignees, a.UserName)
	}
	return out
}

func toComment(c *gitea.Comment) Comment {
	return Comment{ID: c.ID, Body: c.Body, Author: login(c.Poster), AuthorID: userID(c.Poster), Created: c.Created, Updated: c.Updated}
}

func toPull(p *gitea.PullRequest) PullRequest {
	out := PullRequest{
		Number: p.Index, Title: p.Title, Body: p.Body, State: State(p.State),
		Merged: p.HasMerged, Mergeable: p.Mergeable, Author: login(p.Poster), AuthorID: userID(p.Poster),
		Labels: labelNames(p.Labels), URL: p.HTMLURL,
	}
	if p.Head != nil {
		out.Head, out.HeadSHA = p.Head.Ref, p.Head.Sha
		if p.Head.Repository != nil {
			out.HeadRepo = p.Head.Repository.FullName
		}
	}
	// Gitea reports a head repository it cannot load with id -1.
	out.FromFork = p.Head == nil || p.Base == nil || p.Head.RepoID <= 0 || p.Head.RepoID != p.Base.RepoID
	if p.Base != nil {
		out.Base = p.Base.Ref
	}
	if p.MergedCommitID != nil {
		out.MergedSHA = *p.MergedCommitID
	}
	if p.Updated != nil {
		out.Updated = *p.Updated
	}
	if p.Merged != nil {
		out.MergedAt = *p.Merged
	}
	if p.Closed != nil {
		out.ClosedAt = *p.Closed
	}
	return out
}

func toReview(r *gitea.PullReview) Review {
	return Review{
		ID: r.ID, State: ReviewEvent(r.State), Body: r.Body, CommitID: r.CommitID,
		Author: login(r.Reviewer), Dismissed: r.Dismissed, Stale: r.Stale, Submitted: r.Submitted,
	}
}

func toRepo(r *gitea.Repository) Repo {
	out := Repo{
		ID: r.ID, Name: r.Name, FullName: r.FullName, DefaultBranch: r.DefaultBranch,
		Private: r.Private, CloneURL: r.CloneURL, Empty: r.Empty,
	}
	if r.Owner != nil {
		out.Owner = r.Owner.UserName
	}
	return out
}

func toHook(h *gitea.Hook) Webhook {
	return Webhook{ID: h.ID, URL: h.Config["url"], Events: h.Events, Active: h.Active}
}
