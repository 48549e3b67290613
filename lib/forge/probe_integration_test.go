package forge_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestProbeScopeAgainstGitea: each probe tells a token that holds its
// scope from one that lacks it, changes nothing, and a rejected token is
// not taken for a missing scope.
func TestProbeScopeAgainstGitea(t *testing.T) {
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner := srv.NewUser(t, "probe-owner")
	repo := srv.NewRepo(t, owner, "probe")

	if v, err := owner.Client.ServerVersion(ctx); err != nil || v == "" {
		t.Fatalf("version %q: %v", v, err)
	}
	basic, err := forge.New(forge.Options{URL: srv.URL, User: owner.Login, Password: owner.Password})
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := basic.CreateToken(ctx, "narrow", forge.ScopeReadUser, forge.ScopeReadRepository)
	if err != nil {
		t.Fatal(err)
	}
	full := owner.Client.Repo(repo.Owner(), repo.Name())
	thin := srv.Client(t, narrow, owner.Login).Repo(repo.Owner(), repo.Name())
	for _, tc := range []struct {
		scope    string
		narrowOK bool
	}{
		{forge.ScopeReadUser, true},
		{forge.ScopeReadRepository, true},
		{forge.ScopeWriteRepository, false},
		{forge.ScopeReadIssue, false},
		{forge.ScopeWriteIssue, false},
	} {
		if err := full.ProbeScope(ctx, tc.scope); err != nil {
			t.Errorf("all-scope token, %s: %v", tc.scope, err)
		}
		err := thin.ProbeScope(ctx, tc.scope)
		if tc.narrowOK && err != nil || !tc.narrowOK && !errors.Is(err, forge.ErrMissingScope) {
			t.Errorf("narrow token, %s: %v", tc.scope, err)
		}
	}
	bad := srv.Client(t, "0000000000000000000000000000000000000000", owner.Login).Repo(repo.Owner(), repo.Name())
	if err := bad.ProbeScope(ctx, forge.ScopeWriteIssue); !errors.Is(err, forge.ErrUnauthorized) {
		t.Errorf("rejected token: %v", err)
	}
	if err := full.ProbeScope(ctx, "write:admin"); !errors.Is(err, forge.ErrInvalid) {
		t.Errorf("a scope without a probe: %v", err)
	}

	// The branch as its owner sees it: unprotected until a rule exists.
	seen, err := full.BranchAccess(ctx, "main")
	if err != nil || seen.Protected || !seen.UserCanPush {
		t.Errorf("main before protection: %+v %v", seen, err)
	}
	if err := full.SetBranchProtection(ctx, forge.Protection{Branch: "main", RequiredApprovals: 1}); err != nil {
		t.Fatal(err)
	}
	seen, err = full.BranchAccess(ctx, "main")
	if err != nil || !seen.Protected || seen.RequiredApprovals != 1 || seen.UserCanPush {
		t.Errorf("main after protection: %+v %v", seen, err)
	}
}
