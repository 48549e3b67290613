package git_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
)

func TestStripCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://dev-bot:pw@forge.example/o/r.git", "https://forge.example/o/r.git"},
		{"http://tok@forge:3000/o/r.git", "http://forge:3000/o/r.git"},
		{"http://forge:3000/o/r.git", "http://forge:3000/o/r.git"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"/srv/git/r.git", "/srv/git/r.git"},
		{"file:///srv/git/r.git", "file:///srv/git/r.git"},
	}
	for _, tt := range tests {
		if got := git.StripCredentials(tt.in); got != tt.want {
			t.Errorf("StripCredentials(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct{ login, name, email string }{
		{"dev-bot", "dev-bot", "dev-bot@disinto.local"},
		{" review-bot ", "review-bot", "review-bot@disinto.local"},
		{"", "agent", "agent@disinto.local"},
	}
	for _, tt := range tests {
		name, email := git.Identity(tt.login)
		if name != tt.name || email != tt.email {
			t.Errorf("Identity(%q) = %q, %q; want %q, %q", tt.login, name, email, tt.name, tt.email)
		}
	}
}

func TestErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	secret := "extra-secret-value"
	g := git.New(git.Options{
		Env:         isolatedEnv,
		Redactor:    redact.New(secret),
		Credentials: &git.Credentials{URL: "http://127.0.0.1:1", Username: "u", Password: "forge-password-1"},
	})
	repo, err := g.EnsureClone(t.Context(), f.url, filepath.Join(t.TempDir(), "c"), "main")
	if err != nil {
		t.Fatal(err)
	}
	// Both secrets end up in git's argv and stderr (an unknown revision is
	// echoed back); neither may reach the error.
	_, err = repo.Diff(t.Context(), repo.Dir(), secret, "forge-password-1")
	var gerr *git.Error
	if !errors.As(err, &gerr) {
		t.Fatalf("Diff = %v, want a *git.Error", err)
	}
	msg := err.Error() + strings.Join(gerr.Args, " ")
	if strings.Contains(msg, secret) || strings.Contains(msg, "forge-password-1") {
		t.Errorf("secret in error: %v (args %v)", err, gerr.Args)
	}
	if !strings.Contains(err.Error(), "git diff") || !strings.Contains(err.Error(), redact.Mask) {
		t.Errorf("error %q does not name the subcommand and the masked value", err)
	}
}
