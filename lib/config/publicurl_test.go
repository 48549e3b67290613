package config_test

import (
	"strings"
	"testing"
)

// TestPublicURL: FORGE_PUBLIC_URL is the address of links to the forge
// FORGE_URL names; a project on another forge keeps its own, and a value
// that is no URL is a problem naming the variable.
func TestPublicURL(t *testing.T) {
	files := map[string]string{
		"a.toml": "name = \"a\"\nrepo = \"o/a\"\n",
		"b.toml": "name = \"b\"\nrepo = \"o/b\"\nforge_url = \"https://elsewhere.example\"\n",
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantA   string
		wantB   string
		wantErr string
	}{
		{"unset", map[string]string{"FORGE_URL": "http://forgejo:3000"}, "http://forgejo:3000", "https://elsewhere.example", ""},
		{"set", map[string]string{"FORGE_URL": "http://forgejo:3000", "FORGE_PUBLIC_URL": "http://localhost:3000/"}, "http://localhost:3000", "https://elsewhere.example", ""},
		{"not a URL", map[string]string{"FORGE_PUBLIC_URL": "localhost:3000"}, "", "", "environment: FORGE_PUBLIC_URL: \"localhost:3000\" is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.env, files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a, b := c.Project("a").PublicURL, c.Project("b").PublicURL; a != tt.wantA || b != tt.wantB {
				t.Errorf("public URLs a=%q b=%q, want %q %q", a, b, tt.wantA, tt.wantB)
			}
		})
	}
}
