package forge_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestListAndDeleteTokensByID: every token of a user is listed by name
// with the end of its value, and one deleted by id stops authenticating
// while the others keep working.
func TestListAndDeleteTokensByID(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "tokens")
	basic, err := forge.New(forge.Options{URL: srv.URL, User: u.Login, Password: u.Password})
	ok(t, err)
	a := val(basic.CreateToken(ctx, "a", forge.ScopeReadUser)).must(t)
	b := val(basic.CreateToken(ctx, "b", forge.ScopeReadUser)).must(t)

	toks := val(basic.ListTokens(ctx)).must(t)
	byName := map[string]forge.Token{}
	for _, tk := range toks {
		byName[tk.Name] = tk
	}
	if len(toks) != 3 || byName["test"].ID == 0 || byName["a"].LastEight != a[len(a)-8:] || byName["b"].LastEight != b[len(b)-8:] {
		t.Fatalf("tokens = %+v, want test, a and b with their ends", toks)
	}

	ok(t, basic.DeleteTokenID(ctx, byName["a"].ID))
	if _, err := srv.Client(t, a, u.Login).Me(ctx); !errors.Is(err, forge.ErrUnauthorized) {
		t.Errorf("deleted token: Me err = %v, want unauthorized", err)
	}
	if me, err := srv.Client(t, b, u.Login).Me(ctx); err != nil || me.Login != u.Login {
		t.Errorf("kept token: Me = %+v, %v", me, err)
	}
	wantErr(t, basic.DeleteTokenID(ctx, byName["a"].ID), forge.ErrNotFound)
	if _, err := srv.Client(t, b, u.Login).ListTokens(ctx); err == nil {
		t.Error("listing tokens with a token client should be refused")
	}
}
