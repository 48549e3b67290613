package forge_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// A claim whose comment the forge applied but whose answer was lost (the
// JSON cut short) fails as the forge's fault and leaves no claim comment
// behind: the next claim of the same bot wins. (The orphan used to make
// every claim of its author lose to it until it expired.)
func TestClaimWithLostAnswerLeavesNoTrace(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner := srv.NewUser(t, "lost-owner")
	repo := srv.NewRepo(t, owner, "lost")
	val(repo.EnsureLabels(ctx)).must(t)
	bot := srv.NewUser(t, "dev-bot")
	ok(t, repo.AddCollaborator(ctx, bot.Login, forge.PermWrite))
	n := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "lost", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t).Number

	proxy := forgetest.NewProxy(t, srv.URL)
	proxy.Observe(func(_ int, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") {
			proxy.Observe(nil)
			proxy.TruncateNext(1)
		}
	})
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: bot.Token, User: bot.Login})
	ok(t, err)
	rc := c.Repo(repo.Owner(), repo.Name())
	if _, err := rc.Claim(ctx, n, nil); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("claim with its answer lost: %v, want ErrUnavailable", err)
	}
	if cs := val(repo.ListComments(ctx, n)).must(t); len(cs) != 0 {
		t.Errorf("the failed claim left %d comments: %q", len(cs), cs[0].Body)
	}
	if _, err := rc.Claim(ctx, n, nil); err != nil {
		t.Fatalf("the next claim: %v", err)
	}
}

// A claim comment left by a kill mid-claim belongs to the instance that
// wrote it: after the restart the same instance deletes it and wins,
// while another instance of the same bot still waits it out.
func TestClaimAfterARestartDropsItsOwnOrphan(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner := srv.NewUser(t, "orphan-owner")
	repo := srv.NewRepo(t, owner, "orphan")
	val(repo.EnsureLabels(ctx)).must(t)
	bot := srv.NewUser(t, "dev-bot")
	ok(t, repo.AddCollaborator(ctx, bot.Login, forge.PermWrite))
	n := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "orphan", Labels: []forge.LabelName{forge.LabelBacklog}})).must(t).Number
	as := func(instance string) *forge.RepoClient {
		c, err := forge.New(forge.Options{URL: srv.URL, Token: bot.Token, User: bot.Login, Instance: instance})
		ok(t, err)
		return c.Repo(repo.Owner(), repo.Name())
	}
	// The claim comment of instance "a", whose daemon was killed before
	// it assigned itself.
	orphan, err := forge.Marker{Kind: forge.MarkerClaim, Fields: map[string]string{"by": bot.Login, "nonce": "dead", "instance": "a"}}.String()
	ok(t, err)
	val(as("a").CreateComment(ctx, n, orphan)).must(t)

	if _, err := as("b").Claim(ctx, n, nil); !errors.Is(err, forge.ErrClaimed) {
		t.Fatalf("another instance claimed past a live claim comment: %v", err)
	}
	if _, err := as("a").Claim(ctx, n, nil); err != nil {
		t.Fatalf("the restarted instance lost to its own orphan: %v", err)
	}
	if cs := val(repo.ListComments(ctx, n)).must(t); len(cs) != 0 {
		t.Errorf("%d claim comments left, want none", len(cs))
	}
}
