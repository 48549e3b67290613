package forgetest

import (
	"context"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// User is an account created for a test, with a password and an all-scope
// token.
type User struct {
	Login    string
	Password string
	Token    string
	// Client acts as this user with Token.
	Client *forge.Client
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// NewUser creates a user whose login is prefix plus a unique suffix, and a
// token for it.
func (s *Server) NewUser(t testing.TB, prefix string) User {
	t.Helper()
	ctx := testCtx(t)
	login := s.Unique(prefix)
	pass := "pw-" + login + "-secret"
	if _, err := s.Admin(t).CreateUser(ctx, forge.NewUser{Login: login, Email: login + "@example.test", Password: pass}); err != nil {
		t.Fatalf("create user %s: %v", login, err)
	}
	basic, err := forge.New(forge.Options{URL: s.URL, User: login, Password: pass})
	if err != nil {
		t.Fatalf("basic-auth client: %v", err)
	}
	tok, err := basic.CreateToken(ctx, "test", forge.ScopeAll)
	if err != nil {
		t.Fatalf("create token for %s: %v", login, err)
	}
	return User{Login: login, Password: pass, Token: tok, Client: s.Client(t, tok, login)}
}

// NewRepo creates a repository owned by u, named prefix plus a unique
// suffix, with an initial commit on main, and returns a handle acting as u.
func (s *Server) NewRepo(t testing.TB, u User, prefix string) *forge.RepoClient {
	t.Helper()
	name := s.Unique(prefix)
	r, err := u.Client.CreateRepo(testCtx(t), forge.NewRepo{Name: name, AutoInit: true, DefaultBranch: "main"})
	if err != nil {
		t.Fatalf("create repo %s: %v", name, err)
	}
	return u.Client.Repo(r.Owner, r.Name)
}

// Project is a repository set up as disinto init leaves one: the labels,
// and a dev bot and a review bot with write access.
type Project struct {
	Owner, Dev, Reviewer User
	// Repo acts as the owner.
	Repo *forge.RepoClient
}

// NewProject creates an owner, a dev bot and a review bot (logins
// prefixed owner, dev-bot and review-bot) and a repository of the owner
// named prefix plus a unique suffix, with its labels, the bots as
// collaborators and manual merges allowed, as disinto init leaves it.
func (s *Server) NewProject(t testing.TB, prefix string) Project {
	t.Helper()
	p := Project{Owner: s.NewUser(t, "owner"), Dev: s.NewUser(t, "dev-bot"), Reviewer: s.NewUser(t, "review-bot")}
	p.Repo = s.NewRepo(t, p.Owner, prefix)
	ctx := testCtx(t)
	if _, err := p.Repo.EnsureManualMerge(ctx); err != nil {
		t.Fatalf("merge settings of %s: %v", p.Repo.Slug(), err)
	}
	if _, err := p.Repo.EnsureLabels(ctx); err != nil {
		t.Fatalf("labels of %s: %v", p.Repo.Slug(), err)
	}
	for _, u := range []User{p.Dev, p.Reviewer} {
		if err := p.Repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
			t.Fatalf("collaborator %s: %v", u.Login, err)
		}
	}
	return p
}
