package provision_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

// bootstrapAdmin makes a site admin with a password nobody is told, as
// the compose stack's admin step does, and a bootstrap token for it in a
// file, as the forge's CLI writes it.
func bootstrapAdmin(t *testing.T, srv *forgetest.Server, dir string) (login, tokenFile string) {
	t.Helper()
	ctx := context.Background()
	u := srv.NewUser(t, "site-admin")
	makeAdmin(t, srv, u.Login)
	basic, err := forge.New(forge.Options{URL: srv.URL, User: u.Login, Password: u.Password})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := basic.CreateToken(ctx, provision.BootstrapTokenPrefix+"-1", forge.ScopeAll)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile = filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return u.Login, tokenFile
}

// TestBootstrapTokenSetsTheAdminPassword: provisioning given a bootstrap
// token sets the admin's password from the options through the API,
// revokes the token, removes its file, and provisions as that admin; a
// token of someone else is refused before anything changes.
func TestBootstrapTokenSetsTheAdminPassword(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	const pass = "chosen-by-the-operator-1"

	// A token of a user who is not the admin named in the options.
	admin, tokenFile := bootstrapAdmin(t, srv, dir)
	other := srv.NewUser(t, "other")
	opts := options(srv, dir, "acme/widget")
	opts.AdminUser, opts.AdminPassword, opts.BootstrapTokenFile = other.Login, pass, tokenFile
	if _, err := provision.Run(ctx, opts); err == nil || !strings.Contains(err.Error(), tokenFile) {
		t.Fatalf("a token of %s accepted for %s: %v", admin, other.Login, err)
	}
	if _, err := os.Stat(opts.EnvFile); !errors.Is(err, os.ErrNotExist) {
		t.Error("env file written after the refusal")
	}

	opts.AdminUser = admin
	rep := mustRun(t, opts)
	if it, ok := rep.Find("admin", admin); !ok || it.Status != provision.StatusUpdated {
		t.Errorf("admin item %+v", it)
	}
	c, err := forge.New(forge.Options{URL: srv.URL, User: admin, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	if me, err := c.Me(ctx); err != nil || me.Login != admin {
		t.Fatalf("the admin does not log in with the password from the options: %+v, %v", me, err)
	}
	toks, err := c.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		if strings.HasPrefix(tk.Name, provision.BootstrapTokenPrefix) {
			t.Errorf("bootstrap token %s not revoked", tk.Name)
		}
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bootstrap token file left behind (stat: %v)", err)
	}

	// The next start: a stale file (its token revoked) changes nothing.
	if err := os.WriteFile(tokenFile, []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ch := changes(mustRun(t, opts)); len(ch) > 0 {
		t.Errorf("rerun changed %v", ch)
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale bootstrap token file left behind (stat: %v)", err)
	}
}

// makeAdmin makes login a site admin (an admin edit the forge client has
// no call for).
func makeAdmin(t *testing.T, srv *forgetest.Server, login string) {
	t.Helper()
	body := `{"login_name":"` + login + `","source_id":0,"admin":true}`
	req, err := http.NewRequest("PATCH", srv.URL+"/api/v1/admin/users/"+login, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+srv.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("make %s an admin: HTTP %d", login, resp.StatusCode)
	}
}

// TestComposeHandsOverTheBootstrapToken keeps the compose stack in step
// with provisioning: the admin step names its tokens with the prefix that
// provisioning revokes, and writes the file provisioning reads, on the
// volume the two share.
func TestComposeHandsOverTheBootstrapToken(t *testing.T) {
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	compose := string(data)
	for _, want := range []string{
		`--token-name "` + provision.BootstrapTokenPrefix + `-`,
		"mv /tmp/admin-token.new /tmp/admin-token",
		"- forge-bootstrap:/tmp",
		"- --bootstrap-token-file=/run/disinto-bootstrap/admin-token",
		"- forge-bootstrap:/run/disinto-bootstrap",
	} {
		if !strings.Contains(compose, want) {
			t.Errorf("docker-compose.yml lacks %q", want)
		}
	}
}
