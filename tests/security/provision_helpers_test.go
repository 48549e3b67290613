package security

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

// provisionOptions are the options `disinto init --yes` passes for a fresh
// project owner on srv, with its files in dir.
func provisionOptions(srv *forgetest.Server, dir, owner string) provision.Options {
	return provision.Options{
		ForgeURL: srv.URL, AdminUser: srv.AdminLogin, AdminPassword: srv.AdminPassword,
		Repo: owner + "/widget", ProjectsDir: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, "disinto.env"),
	}
}

// forgeCall makes one raw API call; auth is "basic USER:PASS" or
// "token TOKEN". It returns the status and the body.
func forgeCall(t *testing.T, srv *forgetest.Server, method, path, auth string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(testCtx(t), method, srv.URL+"/api/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	kind, cred, _ := strings.Cut(auth, " ")
	switch kind {
	case "basic":
		user, pass, _ := strings.Cut(cred, ":")
		req.SetBasicAuth(user, pass)
	case "token":
		req.Header.Set("Authorization", "token "+cred)
	default:
		t.Fatalf("auth %q", kind)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// mintToken creates a token for login with basic auth, as anyone holding
// the password can.
func mintToken(t *testing.T, srv *forgetest.Server, login, pass, name string) string {
	t.Helper()
	code, body := forgeCall(t, srv, "POST", "/users/"+login+"/tokens", "basic "+login+":"+pass,
		map[string]any{"name": name, "scopes": []string{"all"}})
	if code != http.StatusCreated {
		t.Fatalf("mint token for %s: HTTP %d: %s", login, code, body)
	}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.SHA1 == "" {
		t.Fatalf("mint token for %s: %v: %s", login, err, body)
	}
	return tok.SHA1
}

// tokenLogin returns the login tok authenticates as, or "" when the forge
// refuses it.
func tokenLogin(t *testing.T, srv *forgetest.Server, tok string) string {
	t.Helper()
	code, body := forgeCall(t, srv, "GET", "/user", "token "+tok, nil)
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		return ""
	}
	var me struct {
		Login string `json:"login"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &me) != nil {
		t.Fatalf("GET /user: HTTP %d: %s", code, body)
	}
	return me.Login
}

// newSiteAdmin creates a site administrator with password pass.
func newSiteAdmin(t *testing.T, srv *forgetest.Server, prefix, pass string) string {
	t.Helper()
	login := srv.Unique(prefix)
	auth := "token " + srv.AdminToken
	if code, body := forgeCall(t, srv, "POST", "/admin/users", auth, map[string]any{
		"username": login, "email": login + "@example.test", "password": pass, "must_change_password": false,
	}); code != http.StatusCreated {
		t.Fatalf("create %s: HTTP %d: %s", login, code, body)
	}
	if code, body := forgeCall(t, srv, "PATCH", "/admin/users/"+login, auth, map[string]any{
		"login_name": login, "source_id": 0, "admin": true,
	}); code != http.StatusOK {
		t.Fatalf("make %s an admin: HTTP %d: %s", login, code, body)
	}
	return login
}
