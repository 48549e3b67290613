package forge_test

import (
	"slices"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// loginsOf returns the logins of us, sorted.
func loginsOf(us []forge.User) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.Login)
	}
	slices.Sort(out)
	return out
}

// TestWritersOfUserRepo: on a user's repository the writers are the owner
// and the collaborators with write or admin, never one who may only read
// nor a stranger, and a bot with write access and a bot's token scopes
// (which may not read organisations) may ask.
func TestWritersOfUserRepo(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner, writer, admin, reader := srv.NewUser(t, "owner"), srv.NewUser(t, "writer"), srv.NewUser(t, "admin"), srv.NewUser(t, "reader")
	srv.NewUser(t, "stranger")
	repo := srv.NewRepo(t, owner, "w")
	for u, p := range map[string]forge.Permission{writer.Login: forge.PermWrite, admin.Login: forge.PermAdmin, reader.Login: forge.PermRead} {
		ok(t, repo.AddCollaborator(ctx, u, p))
	}
	got := loginsOf(val(botScoped(t, srv, writer).Repo(repo.Owner(), repo.Name()).Writers(ctx)).must(t))
	want := []string{admin.Login, owner.Login, writer.Login}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("writers %v, want %v", got, want)
	}
}

// TestWritersOfOrgRepo: on an organisation's repository the forge lists a
// member of a team that may only read among the assignees; an admin of the
// repository drops it by the permission it confirms. A bot with write
// access only cannot confirm, and takes the forge's list (the limit the
// Writers doc states).
func TestWritersOfOrgRepo(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	founder, bot, reader := srv.NewUser(t, "founder"), srv.NewUser(t, "bot"), srv.NewUser(t, "reader")
	org := srv.Unique("org")
	val(founder.Client.CreateOrg(ctx, org)).must(t)
	r := val(founder.Client.CreateRepo(ctx, forge.NewRepo{Owner: org, Name: "w", AutoInit: true, DefaultBranch: "main"})).must(t)
	repo := founder.Client.Repo(r.Owner, r.Name)
	ok(t, repo.AddCollaborator(ctx, bot.Login, forge.PermWrite))
	api := sdkAs(t, srv, founder)
	team, _, err := api.CreateTeam(org, sdk.CreateTeamOption{Name: "readers", Permission: sdk.AccessModeRead,
		Units: []sdk.RepoUnitType{sdk.RepoUnitCode, sdk.RepoUnitIssues, sdk.RepoUnitPulls}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.AddTeamMember(team.ID, reader.Login); err != nil {
		t.Fatal(err)
	}
	if _, err := api.AddRepoTeam(org, r.Name, team.Name); err != nil {
		t.Fatal(err)
	}
	asAdmin := loginsOf(val(repo.Writers(ctx)).must(t))
	want := []string{bot.Login, founder.Login}
	slices.Sort(want)
	if !slices.Equal(asAdmin, want) {
		t.Errorf("writers as the repository's admin %v, want %v", asAdmin, want)
	}
	asBot := loginsOf(val(botScoped(t, srv, bot).Repo(r.Owner, r.Name).Writers(ctx)).must(t))
	if !slices.Contains(asBot, bot.Login) || !slices.Contains(asBot, founder.Login) {
		t.Errorf("writers as a write bot %v, want at least %v", asBot, want)
	}
	t.Logf("as a write bot, the read-only team member is listed: %v", slices.Contains(asBot, reader.Login))
}

// sdkAs is a raw SDK client acting as u, for what lib/forge does not do
// (teams).
func sdkAs(t *testing.T, srv *forgetest.Server, u forgetest.User) *sdk.Client {
	t.Helper()
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(u.Token), sdk.SetGiteaVersion(""))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// botScoped is a client acting as u with the token scopes disinto init
// gives a writing bot: no organisation scope.
func botScoped(t *testing.T, srv *forgetest.Server, u forgetest.User) *forge.Client {
	t.Helper()
	basic, err := forge.New(forge.Options{URL: srv.URL, User: u.Login, Password: u.Password})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := basic.CreateToken(ctxFor(t), "bot", forge.ScopeWriteRepository, forge.ScopeWriteIssue, forge.ScopeReadUser)
	if err != nil {
		t.Fatal(err)
	}
	return srv.Client(t, tok, u.Login)
}
