package security

import (
	"net/http"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/provision"
)

// TestTrustOpsRepositoryIsPrivate: the ops repository holds the vault's
// actions and result logs, journals and sprints. `disinto init` creates it
// private: neither an anonymous visitor nor a signed-in outsider reads it,
// while the bots it grants access do.
func TestTrustOpsRepositoryIsPrivate(t *testing.T) {
	srv := gitea.Get(t)
	owner := srv.Unique("private")
	opts := provisionOptions(srv, t.TempDir(), owner)
	rep, err := provision.Run(testCtx(t), opts)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	ops := owner + "/widget-ops"
	if it, ok := rep.Find("repo", ops); !ok || !strings.Contains(it.Detail, "private") {
		t.Errorf("the report of %s: %+v", ops, it)
	}
	path := "/repos/" + ops + "/contents/vault/policy.toml"
	resp, err := http.Get(srv.URL + "/api/v1" + path)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous GET %s: HTTP %d", path, resp.StatusCode)
	}
	mallory := srv.NewUser(t, "mallory")
	if code, _ := forgeCall(t, srv, "GET", path, "token "+mallory.Token, nil); code != http.StatusNotFound {
		t.Errorf("an outsider's GET %s: HTTP %d", path, code)
	}
	env, err := config.ReadEnvFile(opts.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := forgeCall(t, srv, "GET", path, "token "+env["FORGE_VAULT_TOKEN"], nil); code != http.StatusOK {
		t.Errorf("the vault bot's GET %s: HTTP %d: %s", path, code, body)
	}
}
