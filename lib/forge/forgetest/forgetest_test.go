package forgetest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

func TestStartGivesAWorkingServer(t *testing.T) {
	srv := forgetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := srv.NewUser(t, "dev-bot")
	repo := srv.NewRepo(t, u, "project")
	main, err := repo.GetBranch(ctx, "main")
	if err != nil || len(main.SHA) != 40 {
		t.Fatalf("main = %+v, %v", main, err)
	}

	proxy := forgetest.NewProxy(t, srv.URL)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: u.Token, User: u.Login, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.FailNext(1, http.StatusBadGateway)
	if _, err := c.GetUser(ctx, u.Login); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("injected 502: %v", err)
	}
	if got := proxy.Counts(); got["GET /api/v1/user"] != 1 || got["GET /api/v1/users/"+u.Login] != 1 || proxy.Total() != 2 {
		t.Fatalf("counts = %v", got)
	}
}
