package forge_test

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/redact"
)

// TestWritesAreRedacted proves the client masks secrets in every free text
// it writes, against the real server: the redactor's secrets, the client's
// own token, and credentials embedded in URLs, whoever built the text.
func TestWritesAreRedacted(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "redacted")
	const vault = "ghp_vaultsecret0123456789"
	c, err := forge.New(forge.Options{URL: srv.URL, Token: u.Token, User: u.Login, Redactor: redact.New(vault)})
	ok(t, err)
	owner := srv.NewRepo(t, u, "masked")
	repo := c.Repo(owner.Owner(), owner.Name())
	leak := "key " + vault + " token " + u.Token + " url http://bot:hunter2pass@forge/x.git"
	clean := func(what, s string) {
		t.Helper()
		for _, secret := range []string{vault, u.Token, "hunter2pass"} {
			if strings.Contains(s, secret) {
				t.Errorf("%s leaks %q: %q", what, secret, s)
			}
		}
		if !strings.Contains(s, redact.Mask) {
			t.Errorf("%s has no mask: %q", what, s)
		}
	}

	iss := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "t " + vault, Body: leak})).must(t)
	got := val(repo.GetIssue(ctx, iss.Number)).must(t)
	clean("issue title", got.Title)
	clean("issue body", got.Body)

	body, title := "edited "+leak, "edited "+vault
	val(repo.EditIssue(ctx, iss.Number, forge.IssueEdit{Title: &title, Body: &body})).must(t)
	got = val(repo.GetIssue(ctx, iss.Number)).must(t)
	clean("edited title", got.Title)
	clean("edited body", got.Body)

	cm := val(repo.CreateComment(ctx, iss.Number, leak)).must(t)
	clean("comment", cm.Body)
	cm = val(repo.EditComment(ctx, cm.ID, "again "+leak)).must(t)
	clean("edited comment", cm.Body)
	for _, c := range val(repo.ListComments(ctx, iss.Number)).must(t) {
		clean("stored comment", c.Body)
	}

	val(owner.CreateBranch(ctx, "fix/issue-1", "main")).must(t)
	commitOn(t, owner, "fix/issue-1", "a.txt", "one\n")
	pr := val(repo.CreatePull(ctx, forge.NewPull{Title: "fix " + vault, Body: leak, Head: "fix/issue-1", Base: "main"})).must(t)
	gotPR := val(repo.GetPull(ctx, pr.Number)).must(t)
	clean("pull title", gotPR.Title)
	clean("pull body", gotPR.Body)
}
