package forge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// Self asks the forge until it gets a login, then never again; an empty
// login is refused.
func TestSelfAsksOnceItKnows(t *testing.T) {
	var s forge.Self
	calls := 0
	answers := []forge.User{{}, {Login: "dev-bot"}}
	me := func(context.Context) (forge.User, error) {
		calls++
		if calls == 1 {
			return forge.User{}, forge.ErrUnavailable
		}
		return answers[min(calls-2, 1)], nil
	}
	ctx := context.Background()
	if _, err := s.Login(ctx, me); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("first call: %v, want the forge's error", err)
	}
	if _, err := s.Login(ctx, me); err == nil {
		t.Fatal("an empty login was accepted")
	}
	for range 3 {
		if got, err := s.Login(ctx, me); err != nil || got != "dev-bot" {
			t.Fatalf("Login = %q, %v", got, err)
		}
	}
	if calls != 3 {
		t.Errorf("the forge was asked %d times, want 3", calls)
	}
}
