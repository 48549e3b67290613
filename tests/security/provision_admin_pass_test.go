package security

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provision"
)

// TestPlaceholderAdminPasswordIsRefused: an operator who copies
// .env.example and starts the stack without editing it must not get a
// forge whose site admin logs in with the password printed in the
// repository. Provisioning refuses the placeholder (and an empty password)
// before it changes anything, with one line naming .env and the variable.
//
// The forge admin here already has the placeholder password, as the
// compose stack used to set it, so only the refusal stops provisioning.
// Not parallel: it must not share the fixed bot logins with another run.
func TestPlaceholderAdminPasswordIsRefused(t *testing.T) {
	srv := gitea.Get(t)
	example, err := config.ReadEnvFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	placeholder := example["FORGE_ADMIN_PASS"]
	if placeholder == "" {
		t.Fatal(".env.example has no FORGE_ADMIN_PASS placeholder")
	}
	admin := newSiteAdmin(t, srv, "operator", placeholder)

	for _, tt := range []struct{ name, pass string }{{"placeholder", placeholder}, {"empty", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			owner := srv.Unique("victim")
			opts := provisionOptions(srv, dir, owner)
			opts.AdminUser, opts.AdminPassword = admin, tt.pass
			_, err := provision.Run(testCtx(t), opts)
			if err == nil {
				t.Fatalf("provisioning accepted the %s admin password", tt.name)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, ".env") || !strings.Contains(msg, "FORGE_ADMIN_PASS") {
				t.Errorf("error %q: want one line naming .env and FORGE_ADMIN_PASS", msg)
			}
			if _, err := os.Stat(opts.EnvFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("env file written before the refusal (stat: %v)", err)
			}
			if _, err := os.Stat(opts.ProjectsDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("projects dir written before the refusal (stat: %v)", err)
			}
			if _, err := srv.Admin(t).GetUser(testCtx(t), owner); !errors.Is(err, forge.ErrNotFound) {
				t.Errorf("owner %s created before the refusal (get: %v)", owner, err)
			}
		})
	}
}
