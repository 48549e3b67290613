package forge_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestRepoOwners: a user-owned repository is owned by its user; an
// organisation's by the members of its Owners team, which only a member
// (or a site admin) may list.
func TestRepoOwners(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "alice")
	outsider := srv.NewUser(t, "bob")
	if got, err := outsider.Client.RepoOwners(ctx, u.Login); err != nil || !slices.Equal(got, []string{u.Login}) {
		t.Errorf("owners of user %s = %v, %v", u.Login, got, err)
	}
	org := srv.Unique("owned")
	if _, err := u.Client.CreateOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	if got, err := u.Client.RepoOwners(ctx, org); err != nil || !slices.Equal(got, []string{u.Login}) {
		t.Errorf("owners of org %s as its creator = %v, %v", org, got, err)
	}
	if got, err := srv.Admin(t).RepoOwners(ctx, org); err != nil || !slices.Equal(got, []string{u.Login}) {
		t.Errorf("owners of org %s as site admin = %v, %v", org, got, err)
	}
	if got, err := outsider.Client.RepoOwners(ctx, org); !errors.Is(err, forge.ErrForbidden) && !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("owners of org %s as an outsider = %v, %v; want forbidden or not found", org, got, err)
	}
}
