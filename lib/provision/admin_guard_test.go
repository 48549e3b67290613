package provision_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

// TestBotNamedLikeTheAdminIsRefused: a local-model bot declared with the
// site admin's login must not have provisioning reset the admin's
// password (locking the operator out) and hand it to an agent.
func TestBotNamedLikeTheAdminIsRefused(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	dir := t.TempDir()
	opts := options(srv, dir, "acme/widget")
	opts.LocalBots = []provision.LocalBot{{Name: "llama", Login: srv.AdminLogin}}
	if _, err := provision.Run(context.Background(), opts); err == nil {
		t.Fatal("provisioning adopted the site admin as a bot")
	}
	c, err := forge.New(forge.Options{URL: srv.URL, User: srv.AdminLogin, Password: srv.AdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(context.Background()); err != nil {
		t.Fatalf("admin password no longer works: %v", err)
	}
	if v := readEnv(t, filepath.Join(dir, ".env"))["FORGE_PASS_LLAMA"]; v != "" {
		t.Error("an admin password was written for the bot")
	}
}
