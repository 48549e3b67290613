package daemon

import (
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// The env file written by disinto init names one admin (FORGE_ADMIN_USER);
// escalations must mention it when FORGE_ADMIN_USERS is not set.
func TestMaintainers(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"init's env file", map[string]string{"FORGE_ADMIN_USER": "disinto-admin"}, []string{"disinto-admin"}},
		{"explicit list wins", map[string]string{"FORGE_ADMIN_USER": "disinto-admin", "FORGE_ADMIN_USERS": "alice, bob"}, []string{"alice", "bob"}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Maintainers(config.NewEnv(tt.env)); !slices.Equal(got, tt.want) {
				t.Errorf("maintainers = %q, want %q", got, tt.want)
			}
		})
	}
}
