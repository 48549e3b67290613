package provision_test

import (
	"context"
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// mintToken creates a token for login with its password, as anyone who
// learnt the password can.
func mintToken(t *testing.T, srv *forgetest.Server, login, pass string) string {
	t.Helper()
	basic, err := forge.New(forge.Options{URL: srv.URL, User: login, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := basic.CreateToken(context.Background(), "minted", forge.ScopeReadUser)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// onlyIssuedToken fails unless login's only token is the one named
// issued, and the revoked token no longer authenticates.
func onlyIssuedToken(t *testing.T, srv *forgetest.Server, login, pass, issued, revoked string) {
	t.Helper()
	ctx := context.Background()
	if _, err := srv.Client(t, revoked, login).Me(ctx); !errors.Is(err, forge.ErrUnauthorized) {
		t.Errorf("%s: a token minted with the old password survived the rotation: %v", login, err)
	}
	basic, err := forge.New(forge.Options{URL: srv.URL, User: login, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := basic.ListTokens(ctx)
	if err != nil || len(toks) != 1 || toks[0].Name != issued {
		t.Errorf("%s's tokens: %+v, %v; want only %s", login, toks, err, issued)
	}
}
