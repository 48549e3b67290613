package provision_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/provision"
)

// TestPlaceholderIsTheExampleValue keeps the refused placeholder in step
// with what .env.example ships.
func TestPlaceholderIsTheExampleValue(t *testing.T) {
	vals, err := config.ReadEnvFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := vals["FORGE_ADMIN_PASS"]; got != provision.PlaceholderAdminPassword {
		t.Errorf(".env.example FORGE_ADMIN_PASS = %q, refused placeholder is %q", got, provision.PlaceholderAdminPassword)
	}
}

// TestAdminPasswordNobodyChoseIsRefused: the placeholder, an empty and a
// blank password fail before any forge call or file write, with one line
// naming .env and the variable. The forge URL points at a closed port, so
// a run that got as far as the forge would fail differently.
func TestAdminPasswordNobodyChoseIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	for _, pass := range []string{provision.PlaceholderAdminPassword, "", "  ", " " + provision.PlaceholderAdminPassword + "\t"} {
		t.Run(strings.TrimSpace(pass), func(t *testing.T) {
			dir := t.TempDir()
			opts := provision.Options{
				ForgeURL: closed, AdminUser: "root", AdminPassword: pass, Repo: "acme/widget",
				ProjectsDir: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, ".env"),
			}
			rep, err := provision.Run(context.Background(), opts)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, ".env") || !strings.Contains(msg, "FORGE_ADMIN_PASS") {
				t.Errorf("error %q: want one line naming .env and FORGE_ADMIN_PASS", msg)
			}
			if len(rep.Items) != 0 {
				t.Errorf("report %+v, want nothing done", rep.Items)
			}
			if _, err := os.Stat(opts.EnvFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("env file written (stat: %v)", err)
			}
		})
	}
	// A token stands in for a missing password, but not for the
	// placeholder.
	dir := t.TempDir()
	opts := provision.Options{ForgeURL: closed, AdminToken: "tok", AdminPassword: provision.PlaceholderAdminPassword,
		Repo: "acme/widget", ProjectsDir: dir, EnvFile: filepath.Join(dir, ".env")}
	if _, err := provision.Run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "placeholder") {
		t.Errorf("placeholder next to a token: err = %v", err)
	}
}

// TestCredentialsInURLsAreRefused: the forge and source URLs reach git's
// command line, so a password or token in either is refused up front
// (and not repeated in the error).
func TestCredentialsInURLsAreRefused(t *testing.T) {
	dir := t.TempDir()
	base := provision.Options{
		ForgeURL: "http://forge:3000", AdminUser: "root", AdminPassword: "chosen-pass-1", Repo: "acme/widget",
		ProjectsDir: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, ".env"),
	}
	forgeCreds, sourceCreds := base, base
	forgeCreds.ForgeURL = "http://root:hunter2secret@forge:3000"
	sourceCreds.Source = "https://ghp_tokenvalue1@github.example/acme/widget.git"
	for name, opts := range map[string]provision.Options{"forge": forgeCreds, "source": sourceCreds} {
		_, err := provision.Run(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), name+" URL carries credentials") {
			t.Errorf("%s: err = %v", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), "hunter2secret") || strings.Contains(err.Error(), "ghp_tokenvalue1")) {
			t.Errorf("%s: the error repeats the secret", name)
		}
	}
}
