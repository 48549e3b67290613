package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// The reproduce role runs only where a project enables it; every other
// scheduled role is on by default.
func TestReproduceRoleIsOptIn(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        bool
	}{
		{"default", "", false},
		{"enabled", "\n[roles.reproduce]\nenabled = true\ninterval = \"5m\"\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := "name = \"p\"\nrepo = \"o/p\"\n" + tc.extra
			if err := os.WriteFile(filepath.Join(dir, "p.toml"), []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(dir, filepath.Join(dir, "none.env"), []string{"FORGE_TOKEN=dev-token-0123456789"})
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Projects[0]
			if got := cfg.RoleEnabled(p, config.RoleReproduce); got != tc.want {
				t.Errorf("reproduce enabled = %v, want %v", got, tc.want)
			}
			if !cfg.RoleEnabled(p, config.RoleGardener) {
				t.Error("the gardener is off")
			}
		})
	}
}
