package forge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
)

// repoAPI is the operation set shared by forge.RepoClient and
// forgefake.Repo; the conformance cases below run against both.
type repoAPI interface {
	Owner() string
	Name() string
	Slug() string
	Me(ctx context.Context) (forge.User, error)
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	EditIssue(ctx context.Context, n int64, e forge.IssueEdit) (forge.Issue, error)
	CloseIssue(ctx context.Context, n int64) error
	SetAssignees(ctx context.Context, n int64, logins []string) error
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	EditComment(ctx context.Context, id int64, body string) (forge.Comment, error)
	DeleteComment(ctx context.Context, id int64) error
	ListLabels(ctx context.Context) ([]forge.Label, error)
	EnsureLabels(ctx context.Context) ([]forge.LabelName, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	Claim(ctx context.Context, n int64, bots []string) (forge.Claim, error)
	Release(ctx context.Context, c forge.Claim) error
	CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error)
	GetPull(ctx context.Context, n int64) (forge.PullRequest, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	FindPullByHead(ctx context.Context, branch string) (forge.PullRequest, error)
	PullDiff(ctx context.Context, n int64) (string, error)
	ClosePull(ctx context.Context, n int64) error
	Merge(ctx context.Context, n int64, opts forge.MergeOptions) error
	CreateReview(ctx context.Context, n int64, in forge.NewReview) (forge.Review, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	DismissReview(ctx context.Context, n, id int64, message string) error
	CreateStatus(ctx context.Context, sha string, s forge.CommitStatus) error
	CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error)
	GetBranch(ctx context.Context, name string) (forge.Branch, error)
	CreateBranch(ctx context.Context, name, ref string) (forge.Branch, error)
	DeleteBranch(ctx context.Context, name string) error
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	PutFile(ctx context.Context, f forge.FileChange) (string, error)
	SetBranchProtection(ctx context.Context, p forge.Protection) error
	Fork(ctx context.Context) (forge.Repo, error)
	AddCollaborator(ctx context.Context, login string, perm forge.Permission) error
	CollaboratorPermission(ctx context.Context, login string) (forge.Permission, error)
	Writers(ctx context.Context) ([]forge.User, error)
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
}

var (
	_ repoAPI = (*forge.RepoClient)(nil)
	_ repoAPI = (*forgefake.Repo)(nil)
)

// confEnv is one repository seen by its owner and by a second user with
// write access; otherOn opens another repository as the second user.
type confEnv struct {
	owner, other           repoAPI
	ownerLogin, otherLogin string
	otherOn                func(owner, name string) repoAPI
}

func realEnv(t *testing.T) confEnv {
	srv := gitea.Get(t)
	a, b := srv.NewUser(t, "alice"), srv.NewUser(t, "bob")
	r := srv.NewRepo(t, a, "conf")
	if err := r.AddCollaborator(ctxFor(t), b.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	return confEnv{owner: r, other: b.Client.Repo(r.Owner(), r.Name()), ownerLogin: a.Login, otherLogin: b.Login,
		otherOn: func(owner, name string) repoAPI { return b.Client.Repo(owner, name) }}
}

func fakeEnv(t *testing.T) confEnv {
	f := forgefake.New(nil)
	owner := f.Repo("alice", "conf", "alice")
	if err := owner.AddCollaborator(ctxFor(t), "bob", forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	return confEnv{owner: owner, other: f.Repo("alice", "conf", "bob"), ownerLogin: "alice", otherLogin: "bob",
		otherOn: func(o, name string) repoAPI { return f.Repo(o, name, "bob") }}
}

var conformance = []struct {
	name string
	run  func(t *testing.T, e confEnv)
}{
	{"labels", confLabels},
	{"issues", confIssues},
	{"comments", confComments},
	{"claim", confClaim},
	{"claim ignores look-alikes", confClaimLookAlike},
	{"pulls and merge", confPulls},
	{"pulls from a fork", confForkPulls},
	{"permissions", confPermissions},
	{"writers and label events", confWriters},
	{"protection", confProtection},
	{"files", confFiles},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]func(*testing.T) confEnv{"fake": fakeEnv, "gitea": realEnv} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					e := env(t)
					if _, err := e.owner.EnsureLabels(ctxFor(t)); err != nil {
						t.Fatal(err)
					}
					c.run(t, e)
				})
			}
		})
	}
}

// result holds a (value, error) pair so that calls chain: val(f()).must(t).
type result[T any] struct {
	v   T
	err error
}

func val[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) must(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

func confLabels(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	again := val(e.owner.EnsureLabels(ctx)).must(t)
	if len(again) != 0 {
		t.Fatalf("second EnsureLabels created %v", again)
	}
	ls := val(e.owner.ListLabels(ctx)).must(t)
	for _, def := range forge.Registry() {
		i := slices.IndexFunc(ls, func(l forge.Label) bool { return l.Name == def.Name })
		if i < 0 {
			t.Fatalf("label %q missing", def.Name)
		}
		if ls[i].Color != def.Color || ls[i].Description != def.Description {
			t.Errorf("label %q = %+v, want %+v", def.Name, ls[i], def)
		}
	}
	iss := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "t"})).must(t)
	ok(t, e.owner.AddLabels(ctx, iss.Number, forge.LabelBacklog, forge.LabelPriority))
	ok(t, e.owner.AddLabels(ctx, iss.Number, forge.LabelBacklog))
	ok(t, e.owner.RemoveLabels(ctx, iss.Number, forge.LabelPriority, forge.LabelBlocked))
	got := val(e.owner.GetIssue(ctx, iss.Number)).must(t)
	if !slices.Equal(got.Labels, []forge.LabelName{forge.LabelBacklog}) {
		t.Fatalf("labels = %v, want [backlog]", got.Labels)
	}
}

func confIssues(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	a := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "a", Body: "body a", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t)
	b := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "b", Labels: []forge.LabelName{forge.LabelBacklog, forge.LabelPriority}})).must(t)
	c := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "c"})).must(t)
	ok(t, e.owner.SetAssignees(ctx, c.Number, []string{e.otherLogin}))

	numbers := func(is []forge.Issue) []int64 {
		var out []int64
		for _, i := range is {
			out = append(out, i.Number)
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name string
		q    forge.IssueQuery
		want []int64
	}{
		{"open", forge.IssueQuery{}, []int64{a.Number, b.Number, c.Number}},
		{"one label", forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBacklog}}, []int64{a.Number, b.Number}},
		{"all labels", forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBacklog, forge.LabelPriority}}, []int64{b.Number}},
		{"assignee", forge.IssueQuery{Assignee: e.otherLogin}, []int64{c.Number}},
		{"since future", forge.IssueQuery{Since: a.Created.AddDate(1, 0, 0)}, nil},
		{"since past", forge.IssueQuery{Since: a.Created.AddDate(0, 0, -1)}, []int64{a.Number, b.Number, c.Number}},
	}
	for _, tc := range cases {
		if got := numbers(val(e.owner.ListIssues(ctx, tc.q)).must(t)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: issues %v, want %v", tc.name, got, tc.want)
		}
	}

	title, body := "a2", "new body"
	got := val(e.owner.EditIssue(ctx, a.Number, forge.IssueEdit{Title: &title, Body: &body})).must(t)
	if got.Title != title || got.Body != body || got.Author != e.ownerLogin {
		t.Fatalf("edited issue = %+v", got)
	}
	ok(t, e.owner.CloseIssue(ctx, a.Number))
	if got := numbers(val(e.owner.ListIssues(ctx, forge.IssueQuery{State: forge.StateClosed})).must(t)); !slices.Equal(got, []int64{a.Number}) {
		t.Fatalf("closed issues %v", got)
	}
	_, err := e.owner.GetIssue(ctx, 99999)
	wantErr(t, err, forge.ErrNotFound)
	wantErr(t, e.owner.AddLabels(ctx, b.Number, forge.LabelName("no-such-label")), forge.ErrNotFound)
}

func confComments(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	iss := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "comments"})).must(t)
	c1 := val(e.owner.CreateComment(ctx, iss.Number, "first")).must(t)
	val(e.other.CreateComment(ctx, iss.Number, "second")).must(t)
	val(e.owner.EditComment(ctx, c1.ID, "first, edited")).must(t)
	cs := val(e.owner.ListComments(ctx, iss.Number)).must(t)
	if len(cs) != 2 || cs[0].Body != "first, edited" || cs[1].Author != e.otherLogin {
		t.Fatalf("comments = %+v", cs)
	}
	ok(t, e.owner.DeleteComment(ctx, c1.ID))
	if cs := val(e.owner.ListComments(ctx, iss.Number)).must(t); len(cs) != 1 {
		t.Fatalf("after delete: %+v", cs)
	}
}

func confClaim(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	iss := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "claim me", Labels: []forge.LabelName{forge.LabelBacklog, forge.LabelPriority}})).must(t)
	cl := val(e.owner.Claim(ctx, iss.Number, nil)).must(t)
	got := val(e.owner.GetIssue(ctx, iss.Number)).must(t)
	if !slices.Equal(got.Assignees, []string{e.ownerLogin}) || got.HasLabel(forge.LabelBacklog) || !got.HasLabel(forge.LabelInProgress) || !got.HasLabel(forge.LabelPriority) {
		t.Fatalf("claimed issue = %+v", got)
	}
	_, err := e.other.Claim(ctx, iss.Number, nil)
	wantErr(t, err, forge.ErrClaimed)
	if cs := val(e.owner.ListComments(ctx, iss.Number)).must(t); len(cs) != 0 {
		t.Fatalf("claims left comments: %+v", cs)
	}
	ok(t, e.owner.Release(ctx, cl))
	got = val(e.owner.GetIssue(ctx, iss.Number)).must(t)
	if len(got.Assignees) != 0 || !got.HasLabel(forge.LabelBacklog) || got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("released issue = %+v", got)
	}
	val(e.other.Claim(ctx, iss.Number, nil)).must(t)

	closed := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "closed", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t)
	ok(t, e.owner.CloseIssue(ctx, closed.Number))
	_, err = e.owner.Claim(ctx, closed.Number, nil)
	wantErr(t, err, forge.ErrClaimed)
	if got := val(e.owner.GetIssue(ctx, closed.Number)).must(t); len(got.Assignees) != 0 || got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("claim of a closed issue left %+v", got)
	}
}

// confClaimLookAlike: a claim comment by someone outside the bot set, even
// one naming the claimant, neither wins nor blocks a claim.
func confClaimLookAlike(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	iss := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "contested", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t)
	fake := val(forge.Marker{Kind: forge.MarkerClaim, Fields: map[string]string{"by": e.ownerLogin, "nonce": "0000000000000000"}}.String()).must(t)
	val(e.other.CreateComment(ctx, iss.Number, fake)).must(t)
	val(e.owner.Claim(ctx, iss.Number, []string{"review-bot"})).must(t)
	if got := val(e.owner.GetIssue(ctx, iss.Number)).must(t); !slices.Equal(got.Assignees, []string{e.ownerLogin}) {
		t.Fatalf("claimed issue = %+v", got)
	}
}

// commitOn creates or updates file on branch, returning the new head.
func commitOn(t *testing.T, r repoAPI, branch, path, content string) string {
	ctx := ctxFor(t)
	sha := ""
	if f, err := r.GetFile(ctx, path, branch); err == nil {
		sha = f.SHA
	}
	val(r.PutFile(ctx, forge.FileChange{Path: path, Content: []byte(content), SHA: sha, Branch: branch, Message: "change " + path})).must(t)
	return val(r.GetBranch(ctx, branch)).must(t).SHA
}

func confPulls(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	val(e.owner.CreateBranch(ctx, "fix/issue-1", "main")).must(t)
	head1 := commitOn(t, e.owner, "fix/issue-1", "a.txt", "one\n")
	pr := val(e.owner.CreatePull(ctx, forge.NewPull{Title: "fix: a (#1)", Body: "Fixes #1", Head: "fix/issue-1", Base: "main"})).must(t)
	if pr.HeadSHA != head1 || pr.Head != "fix/issue-1" || pr.Base != "main" || pr.State != forge.StateOpen {
		t.Fatalf("pull = %+v, want head %s", pr, head1)
	}
	if found := val(e.other.FindPullByHead(ctx, "fix/issue-1")).must(t); found.Number != pr.Number {
		t.Fatalf("FindPullByHead = #%d, want #%d", found.Number, pr.Number)
	}
	_, err := e.owner.FindPullByHead(ctx, "nope")
	wantErr(t, err, forge.ErrNotFound)
	if open := val(e.owner.ListPulls(ctx, forge.StateOpen)).must(t); len(open) != 1 {
		t.Fatalf("open pulls = %+v", open)
	}
	if d := val(e.owner.PullDiff(ctx, pr.Number)).must(t); d == "" {
		t.Fatal("empty diff")
	}

	if st := val(e.owner.CombinedStatus(ctx, head1)).must(t); st.State != "" {
		t.Fatalf("status before CI = %+v", st)
	}
	ok(t, e.owner.CreateStatus(ctx, head1, forge.CommitStatus{Context: "ci/test", State: forge.CIPending}))
	ok(t, e.owner.CreateStatus(ctx, head1, forge.CommitStatus{Context: "ci/test", State: forge.CISuccess}))
	if st := val(e.owner.CombinedStatus(ctx, head1)).must(t); st.State != forge.CISuccess {
		t.Fatalf("status = %+v, want success", st)
	}
	ok(t, e.owner.CreateStatus(ctx, head1, forge.CommitStatus{Context: "ci/lint", State: forge.CIFailure}))
	if st := val(e.owner.CombinedStatus(ctx, head1)).must(t); st.State != forge.CIFailure || len(st.Statuses) != 2 {
		t.Fatalf("status = %+v, want failure of 2", st)
	}
	for _, s := range val(e.owner.CombinedStatus(ctx, head1)).must(t).Statuses {
		if s.Updated.IsZero() {
			t.Errorf("status %s carries no time of its last change", s.Context)
		}
	}

	_, err = e.owner.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "self", CommitID: head1})
	wantErr(t, err, forge.ErrInvalid)
	rv := val(e.other.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "lgtm", CommitID: head1})).must(t)
	if rv.State != forge.ReviewApprove || rv.CommitID != head1 || rv.Author != e.otherLogin {
		t.Fatalf("review = %+v", rv)
	}

	head2 := commitOn(t, e.owner, "fix/issue-1", "a.txt", "two\n")
	err = e.owner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head1})
	wantErr(t, err, forge.ErrHeadMoved)
	if p := val(e.owner.GetPull(ctx, pr.Number)).must(t); p.Merged || p.HeadSHA != head2 {
		t.Fatalf("after stale merge: %+v", p)
	}
	rs := val(e.owner.ListReviews(ctx, pr.Number)).must(t)
	// The forge flags stale reviews asynchronously; the commit id is what
	// tells a review of an older head.
	if len(rs) != 1 || rs[0].CommitID != head1 {
		t.Fatalf("reviews after push = %+v, want one of %s", rs, head1)
	}
	ok(t, e.owner.DismissReview(ctx, pr.Number, rs[0].ID, "outdated"))
	if rs := val(e.owner.ListReviews(ctx, pr.Number)).must(t); !rs[0].Dismissed {
		t.Fatalf("review not dismissed: %+v", rs[0])
	}

	ok(t, e.owner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head2, DeleteBranch: true}))
	p := val(e.owner.GetPull(ctx, pr.Number)).must(t)
	if !p.Merged || p.State != forge.StateClosed {
		t.Fatalf("after merge: %+v", p)
	}
	wantErr(t, e.owner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head2}), forge.ErrAlreadyMerged)
	if f := val(e.owner.GetFile(ctx, "a.txt", "main")).must(t); string(f.Content) != "two\n" {
		t.Fatalf("main has %q", f.Content)
	}
	_, err = e.owner.GetBranch(ctx, "fix/issue-1")
	wantErr(t, err, forge.ErrNotFound)
	ok(t, e.owner.DeleteBranch(ctx, "fix/issue-1"))

	val(e.owner.CreateBranch(ctx, "fix/issue-2", "main")).must(t)
	commitOn(t, e.owner, "fix/issue-2", "b.txt", "b\n")
	pr2 := val(e.owner.CreatePull(ctx, forge.NewPull{Title: "two", Head: "fix/issue-2", Base: "main"})).must(t)
	ok(t, e.owner.ClosePull(ctx, pr2.Number))
	if p := val(e.owner.GetPull(ctx, pr2.Number)).must(t); p.State != forge.StateClosed || p.Merged {
		t.Fatalf("closed pull = %+v", p)
	}
}

// confForkPulls: a pull request from a fork reports its head repository
// and FromFork; one from the repository itself does not.
func confForkPulls(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	fork := val(e.other.Fork(ctx)).must(t)
	fr := e.otherOn(fork.Owner, fork.Name)
	val(fr.CreateBranch(ctx, "fix/issue-7", "main")).must(t)
	head := commitOn(t, fr, "fix/issue-7", "f.txt", "from a fork\n")
	pr := val(e.other.CreatePull(ctx, forge.NewPull{Title: "fork", Head: fork.Owner + ":fix/issue-7", Base: "main"})).must(t)
	val(e.owner.CreateBranch(ctx, "fix/issue-7", "main")).must(t)
	commitOn(t, e.owner, "fix/issue-7", "g.txt", "own\n")
	own := val(e.owner.CreatePull(ctx, forge.NewPull{Title: "own", Head: "fix/issue-7", Base: "main"})).must(t)
	for _, p := range []forge.PullRequest{pr, val(e.owner.GetPull(ctx, pr.Number)).must(t)} {
		if !p.FromFork || p.HeadRepo != fork.FullName || p.Head != "fix/issue-7" || p.HeadSHA != head || p.Author != e.otherLogin {
			t.Fatalf("fork pull = %+v, want from fork %s at %s by %s", p, fork.FullName, head, e.otherLogin)
		}
	}
	for _, p := range []forge.PullRequest{own, val(e.owner.GetPull(ctx, own.Number)).must(t)} {
		if p.FromFork || p.HeadRepo != e.owner.Slug() || p.Author != e.ownerLogin {
			t.Fatalf("own pull = %+v, want from %s", p, e.owner.Slug())
		}
	}
	listed := map[int64]bool{}
	for _, p := range val(e.owner.ListPulls(ctx, forge.StateOpen)).must(t) {
		listed[p.Number] = p.FromFork
	}
	if fromFork, ok := listed[pr.Number]; !ok || !fromFork {
		t.Fatalf("listing: fork pull #%d from fork %v (listed %v)", pr.Number, fromFork, ok)
	}
	if fromFork, ok := listed[own.Number]; !ok || fromFork {
		t.Fatalf("listing: own pull #%d from fork %v (listed %v)", own.Number, fromFork, ok)
	}
}

// confPermissions: the owner reads anyone's permission, a collaborator
// only its own.
func confPermissions(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	for _, c := range []struct {
		as    repoAPI
		login string
		want  forge.Permission
	}{
		{e.owner, e.otherLogin, forge.PermWrite},
		{e.owner, e.ownerLogin, forge.PermOwner},
		{e.other, e.otherLogin, forge.PermWrite},
	} {
		if got := val(c.as.CollaboratorPermission(ctx, c.login)).must(t); got != c.want || !got.CanWrite() {
			t.Errorf("permission of %s = %q, want %q", c.login, got, c.want)
		}
	}
	_, err := e.other.CollaboratorPermission(ctx, e.ownerLogin)
	wantErr(t, err, forge.ErrForbidden)
	_, err = e.owner.CollaboratorPermission(ctx, "no-such-user-zq9")
	wantErr(t, err, forge.ErrNotFound)
}

// confWriters: the writers are the owner and the write collaborator, by
// the ids the forge gives authors; the timeline says who applied and who
// removed which label, including those an issue was created with.
func confWriters(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	alice, bob := val(e.owner.Me(ctx)).must(t), val(e.other.Me(ctx)).must(t)
	ws := val(e.other.Writers(ctx)).must(t)
	ids := map[int64]string{}
	for _, w := range ws {
		ids[w.ID] = w.Login
	}
	if len(ws) != 2 || !strings.EqualFold(ids[alice.ID], e.ownerLogin) || !strings.EqualFold(ids[bob.ID], e.otherLogin) {
		t.Fatalf("writers %+v, want %s (%d) and %s (%d)", ws, e.ownerLogin, alice.ID, e.otherLogin, bob.ID)
	}
	i := val(e.owner.CreateIssue(ctx, forge.NewIssue{Title: "t", Body: "b", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t)
	if i.AuthorID != alice.ID {
		t.Errorf("author id %d, want %d", i.AuthorID, alice.ID)
	}
	ok(t, e.other.RemoveLabels(ctx, i.Number, forge.LabelBacklog))
	ok(t, e.other.AddLabels(ctx, i.Number, forge.LabelBacklog, forge.LabelPriority))
	evs := val(e.other.LabelEvents(ctx, i.Number)).must(t)
	type ev struct {
		label forge.LabelName
		added bool
		by    int64
	}
	want := []ev{{forge.LabelBacklog, true, alice.ID}, {forge.LabelBacklog, false, bob.ID}, {forge.LabelBacklog, true, bob.ID}, {forge.LabelPriority, true, bob.ID}}
	var got []ev
	for _, x := range evs {
		got = append(got, ev{x.Label, x.Added, x.By.ID})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("label events %+v, want %+v", got, want)
	}
}

func confProtection(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	ok(t, e.owner.SetBranchProtection(ctx, forge.Protection{
		Branch: "main", RequiredApprovals: 1, ApprovalsWhitelist: []string{e.otherLogin},
		MergeWhitelist: []string{e.ownerLogin}, PushWhitelist: []string{e.ownerLogin},
	}))
	val(e.owner.CreateBranch(ctx, "fix/issue-9", "main")).must(t)
	head := commitOn(t, e.owner, "fix/issue-9", "p.txt", "p\n")
	pr := val(e.owner.CreatePull(ctx, forge.NewPull{Title: "protected", Head: "fix/issue-9", Base: "main"})).must(t)
	err := e.owner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head})
	wantErr(t, err, forge.ErrMergeBlocked)
	if p := val(e.owner.GetPull(ctx, pr.Number)).must(t); p.Merged {
		t.Fatal("blocked merge merged")
	}
	val(e.other.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "ok", CommitID: head})).must(t)
	wantErr(t, e.other.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head}), forge.ErrMergeBlocked)
	ok(t, e.owner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head}))
}

func confFiles(t *testing.T, e confEnv) {
	ctx := ctxFor(t)
	sha := val(e.owner.PutFile(ctx, forge.FileChange{Path: "dir/state.json", Content: []byte(`{"a":1}`), Branch: "main", Message: "add"})).must(t)
	f := val(e.owner.GetFile(ctx, "dir/state.json", "")).must(t)
	if f.SHA != sha || string(f.Content) != `{"a":1}` {
		t.Fatalf("file = %+v, want sha %s", f, sha)
	}
	sha2 := val(e.owner.PutFile(ctx, forge.FileChange{Path: "dir/state.json", Content: []byte(`{"a":2}`), SHA: sha, Branch: "main", Message: "update"})).must(t)
	_, err := e.owner.PutFile(ctx, forge.FileChange{Path: "dir/state.json", Content: []byte(`{"a":3}`), SHA: sha, Branch: "main", Message: "stale"})
	if !errors.Is(err, forge.ErrConflict) && !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("stale put: %v", err)
	}
	if f := val(e.owner.GetFile(ctx, "dir/state.json", "main")).must(t); f.SHA != sha2 || !strings.Contains(string(f.Content), "2") {
		t.Fatalf("file after stale put = %+v", f)
	}
	_, err = e.owner.GetFile(ctx, "missing.txt", "main")
	wantErr(t, err, forge.ErrNotFound)
}
