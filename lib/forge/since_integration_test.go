package forge_test

import (
	"fmt"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// TestListSince: the forge's since filter is inclusive (an issue updated
// in the very second asked for is listed), returns closed issues too when
// asked for every state, lists nothing updated before, and costs no more
// pages than it returns.
func TestListSince(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "since")
	repo := srv.NewRepo(t, u, "since")
	var last forge.Issue
	for i := range 60 {
		last = val(repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("issue %d", i)})).must(t)
	}
	ok(t, repo.CloseIssue(ctx, last.Number))
	closed := val(repo.GetIssue(ctx, last.Number)).must(t)
	proxy := forgetest.NewProxy(t, srv.URL)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: u.Token, User: u.Login})
	ok(t, err)
	got := val(c.Repo(repo.Owner(), repo.Name()).ListIssues(ctx, forge.IssueQuery{State: forge.StateAll, Since: closed.Updated})).must(t)
	found := false
	for _, i := range got {
		found = found || (i.Number == last.Number && i.State == forge.StateClosed)
		if i.Updated.Before(closed.Updated) {
			t.Errorf("#%d updated %s, before the since %s", i.Number, i.Updated, closed.Updated)
		}
	}
	if !found {
		t.Errorf("since the close: %d issues, not the closed one", len(got))
	}
	if n, pages := proxy.Total(), len(got)/50+1; n > pages {
		t.Errorf("listing %d changed issues took %d requests, want at most %d: %v", len(got), n, pages, proxy.Counts())
	}
}
