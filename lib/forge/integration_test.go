package forge_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"golang.org/x/sync/errgroup"
)

func TestPaginationOver120Issues(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "pager")
	repo := srv.NewRepo(t, u, "many")
	val(repo.EnsureLabels(ctx)).must(t)
	const n = 125
	var g errgroup.Group
	g.SetLimit(6)
	for i := range n {
		g.Go(func() error {
			in := forge.NewIssue{Title: fmt.Sprintf("issue %d", i)}
			if i%5 == 0 {
				in.Labels = []forge.LabelName{forge.LabelBacklog}
			}
			_, err := repo.CreateIssue(ctx, in)
			return err
		})
	}
	ok(t, g.Wait())

	proxy := forgetest.NewProxy(t, srv.URL)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: u.Token, User: u.Login})
	ok(t, err)
	viaProxy := c.Repo(repo.Owner(), repo.Name())
	all := val(viaProxy.ListIssues(ctx, forge.IssueQuery{})).must(t)
	seen := map[int64]bool{}
	for _, i := range all {
		seen[i.Number] = true
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("listed %d issues (%d distinct), want %d", len(all), len(seen), n)
	}
	if got := proxy.Total(); got != 3 {
		t.Fatalf("%d requests for %d issues, want 3 pages of 50: %v", got, n, proxy.Counts())
	}
	proxy.Reset()
	backlog := val(viaProxy.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBacklog}})).must(t)
	if len(backlog) != n/5 || proxy.Total() != 1 {
		t.Fatalf("backlog: %d issues in %d requests, want %d in 1", len(backlog), proxy.Total(), n/5)
	}
}

func TestCommentsPaginate(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "talker")
	repo := srv.NewRepo(t, u, "talk")
	iss := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "chatty"})).must(t)
	for i := range 55 {
		val(repo.CreateComment(ctx, iss.Number, fmt.Sprint("c", i))).must(t)
	}
	cs := val(repo.ListComments(ctx, iss.Number)).must(t)
	if len(cs) != 55 || cs[0].Body != "c0" || cs[54].Body != "c54" {
		t.Fatalf("got %d comments", len(cs))
	}
}

func TestClaimRace(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner := srv.NewUser(t, "racer-owner")
	repo := srv.NewRepo(t, owner, "race")
	val(repo.EnsureLabels(ctx)).must(t)
	bots := []forgetest.User{srv.NewUser(t, "dev-bot"), srv.NewUser(t, "dev-qwen")}
	logins := make([]string, 0, len(bots))
	for _, b := range bots {
		ok(t, repo.AddCollaborator(ctx, b.Login, forge.PermWrite))
		logins = append(logins, b.Login)
	}
	const n = 25
	issues := make([]int64, n)
	for i := range n {
		issues[i] = val(repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprint("race ", i), Labels: []forge.LabelName{forge.LabelBacklog}})).must(t).Number
	}

	var mu sync.Mutex
	winners := map[int64][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, b := range bots {
		r := b.Client.Repo(repo.Owner(), repo.Name())
		for _, num := range issues {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := r.Claim(ctx, num, logins)
				switch {
				case err == nil:
					mu.Lock()
					winners[num] = append(winners[num], b.Login)
					mu.Unlock()
				case !errors.Is(err, forge.ErrClaimed):
					errs <- fmt.Errorf("%s claims #%d: %w", b.Login, num, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, num := range issues {
		w := winners[num]
		if len(w) != 1 {
			t.Errorf("issue #%d: winners %v, want exactly one", num, w)
			continue
		}
		got := val(repo.GetIssue(ctx, num)).must(t)
		if !slices.Equal(got.Assignees, w) {
			t.Errorf("issue #%d: assignees %v, want %v", num, got.Assignees, w)
		}
		if !slices.Equal(got.Labels, []forge.LabelName{forge.LabelInProgress}) {
			t.Errorf("issue #%d: labels %v, want [in-progress]", num, got.Labels)
		}
		if cs := val(repo.ListComments(ctx, num)).must(t); len(cs) != 0 {
			t.Errorf("issue #%d: claim left %d comments", num, len(cs))
		}
	}
}

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "flaky")
	repo := srv.NewRepo(t, u, "flaky")
	iss := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "survive"})).must(t)

	proxy := forgetest.NewProxy(t, srv.URL)
	client := func(retries int, timeout time.Duration, token string) *forge.RepoClient {
		c, err := forge.New(forge.Options{
			URL: proxy.URL, Token: token, User: u.Login, MaxRetries: retries,
			HTTPClient: &http.Client{Timeout: timeout},
		})
		ok(t, err)
		return c.Repo(repo.Owner(), repo.Name())
	}
	r := client(4, 2*time.Second, u.Token)
	// The timeout case gives the retried request more time than one held
	// back, so a slow but healthy forge (a loaded machine) answers it
	// within one retry.
	patient := client(4, 5*time.Second, u.Token)
	cases := []struct {
		name      string
		client    *forge.RepoClient
		inject    func()
		wantCalls int
	}{
		{"502s", r, func() { proxy.FailNext(3, http.StatusBadGateway) }, 4},
		{"429 with Retry-After", r, func() { proxy.RateLimitNext(1, time.Second) }, 2},
		{"timeout", patient, func() { proxy.DelayNext(1, 15*time.Second) }, 2},
		{"503 then 500", r, func() { proxy.FailNext(1, 503); proxy.FailNext(1, 500) }, 3},
	}
	for _, tc := range cases {
		proxy.Reset()
		tc.inject()
		got, err := tc.client.GetIssue(ctx, iss.Number)
		if err != nil || got.Title != "survive" {
			t.Fatalf("%s: %+v, %v", tc.name, got, err)
		}
		if proxy.Total() != tc.wantCalls {
			t.Fatalf("%s: %d requests, want %d", tc.name, proxy.Total(), tc.wantCalls)
		}
	}

	proxy.Reset()
	proxy.FailNext(10, http.StatusBadGateway)
	_, err := client(2, 2*time.Second, u.Token).GetIssue(ctx, iss.Number)
	wantErr(t, err, forge.ErrUnavailable)
	if proxy.Total() != 3 {
		t.Fatalf("exhausted budget: %d requests, want 3", proxy.Total())
	}

	proxy.Reset()
	_, err = client(4, 2*time.Second, "0000000000000000000000000000000000000000").GetIssue(ctx, iss.Number)
	wantErr(t, err, forge.ErrUnauthorized)
	if proxy.Total() != 1 {
		t.Fatalf("401: %d requests, want 1", proxy.Total())
	}
}

func TestProvisioning(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	admin := srv.Admin(t)
	me := val(admin.Me(ctx)).must(t)
	if !me.IsAdmin || me.Login != srv.AdminLogin {
		t.Fatalf("admin = %+v", me)
	}

	bot := srv.Unique("review-bot")
	val(admin.CreateUser(ctx, forge.NewUser{Login: bot, Email: bot + "@example.test", Password: "bot-password-1"})).must(t)
	_, err := admin.CreateUser(ctx, forge.NewUser{Login: bot, Email: bot + "@example.test", Password: "bot-password-1"})
	if !errors.Is(err, forge.ErrInvalid) && !errors.Is(err, forge.ErrConflict) {
		t.Fatalf("duplicate user: %v", err)
	}
	basic, err := forge.New(forge.Options{URL: srv.URL, User: bot, Password: "bot-password-1"})
	ok(t, err)
	token := val(basic.CreateToken(ctx, "disinto", forge.ScopeWriteIssue, forge.ScopeWriteRepository, forge.ScopeReadUser)).must(t)
	botClient := srv.Client(t, token, bot)
	if got := val(botClient.Me(ctx)).must(t); got.Login != bot {
		t.Fatalf("token user = %+v", got)
	}
	if _, err := admin.CreateToken(ctx, "x"); err == nil {
		t.Fatal("token creation with a token client should be refused")
	}

	org := srv.Unique("factory")
	val(admin.CreateOrg(ctx, org)).must(t)
	// Private: on a public repository read access is implicit, so Gitea
	// drops read-only users from the approvals whitelist.
	rp := val(admin.CreateRepo(ctx, forge.NewRepo{Owner: org, Name: "project", Private: true, AutoInit: true, DefaultBranch: "main"})).must(t)
	if rp.Owner != org || rp.DefaultBranch != "main" {
		t.Fatalf("repo = %+v", rp)
	}
	profile := val(admin.CreateRepoFor(ctx, bot, forge.NewRepo{Name: ".profile", AutoInit: true})).must(t)
	if profile.Owner != bot {
		t.Fatalf("profile repo = %+v", profile)
	}
	repo := admin.Repo(org, "project")
	ok(t, repo.AddCollaborator(ctx, bot, forge.PermRead))
	ok(t, repo.AddCollaborator(ctx, bot, forge.PermRead))
	created := val(repo.EnsureLabels(ctx)).must(t)
	if len(created) != len(forge.Registry()) {
		t.Fatalf("created %d labels, want %d", len(created), len(forge.Registry()))
	}

	want := forge.Protection{Branch: "main", RequiredApprovals: 1, ApprovalsWhitelist: []string{bot}, MergeWhitelist: []string{srv.AdminLogin}}
	ok(t, repo.SetBranchProtection(ctx, want))
	want.RequiredApprovals = 2
	ok(t, repo.SetBranchProtection(ctx, want)) // update in place
	got := val(repo.GetBranchProtection(ctx, "main")).must(t)
	if got.RequiredApprovals != 2 || !slices.Equal(got.ApprovalsWhitelist, []string{bot}) || !slices.Equal(got.MergeWhitelist, []string{srv.AdminLogin}) {
		t.Fatalf("protection = %+v", got)
	}

	hook := val(repo.CreateWebhook(ctx, forge.NewWebhook{URL: "http://127.0.0.1:9/hook", Secret: "s3cret", Events: []string{"issues", "pull_request"}})).must(t)
	hooks := val(repo.ListWebhooks(ctx)).must(t)
	if len(hooks) != 1 || hooks[0].ID != hook.ID || hooks[0].URL != "http://127.0.0.1:9/hook" {
		t.Fatalf("hooks = %+v", hooks)
	}

	// A read-only collaborator can read but not label.
	botRepo := botClient.Repo(org, "project")
	iss := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "ro"})).must(t)
	val(botRepo.GetIssue(ctx, iss.Number)).must(t)
	wantErr(t, botRepo.AddLabels(ctx, iss.Number, forge.LabelBacklog), forge.ErrForbidden)
}

func TestOnRequestCountsForgeCalls(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "counted")
	var mu sync.Mutex
	var paths []string
	c, err := forge.New(forge.Options{URL: srv.URL, Token: u.Token, User: u.Login, OnRequest: func(method, path string, status int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, fmt.Sprint(method, " ", path, " ", status))
	}})
	ok(t, err)
	val(c.Me(ctx)).must(t)
	val(c.Me(ctx)).must(t)
	if len(paths) != 1 || paths[0] != "GET /api/v1/user 200" {
		t.Fatalf("requests = %v", paths)
	}
}

// TestPaginationUnderASmallerServerPageCap: a forge configured with a page
// cap below the client's page size answers full pages shorter than asked
// for; listing must still return every item.
func TestPaginationUnderASmallerServerPageCap(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "capped")
	repo := srv.NewRepo(t, u, "capped")
	const n = 45
	var g errgroup.Group
	g.SetLimit(6)
	for i := range n {
		g.Go(func() error {
			_, err := repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("issue %d", i)})
			return err
		})
	}
	ok(t, g.Wait())

	proxy := forgetest.NewProxy(t, srv.URL)
	proxy.CapPageSize(20)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: u.Token, User: u.Login})
	ok(t, err)
	viaProxy := c.Repo(repo.Owner(), repo.Name())
	all := val(viaProxy.ListIssues(ctx, forge.IssueQuery{})).must(t)
	seen := map[int64]bool{}
	for _, i := range all {
		seen[i.Number] = true
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("listed %d issues (%d distinct), want %d", len(all), len(seen), n)
	}
	if got := proxy.Total(); got != 3 {
		t.Fatalf("%d requests for %d issues, want 3 pages of 20: %v", got, n, proxy.Counts())
	}
	proxy.Reset()
	val(repo.EnsureLabels(ctx)).must(t)
	ls := val(viaProxy.ListLabels(ctx)).must(t)
	if len(ls) != len(forge.Registry()) {
		t.Fatalf("listed %d labels, want %d", len(ls), len(forge.Registry()))
	}
}
