package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
)

// TestArchitectScheduled: with the real registry and its own token the
// architect of a project is built, scheduled every six hours by default
// and implemented; with only the dev bot's token it is refused, with an
// error naming the variable to set.
func TestArchitectScheduled(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	build := func(env ...string) (*daemon, error) {
		a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
			env:         append([]string{"AGENT_ROLES=architect", "FORGE_TOKEN=dev-token-123", "FORGE_USER=dev-bot", "FORGE_PASS=dev-pass-123"}, env...),
			projectsDir: filepath.Join(dir, "projects"), envFile: filepath.Join(dir, "none"), dataDir: sessionDataDir(t)}
		cfg, err := a.loadConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Projects[0].Roles[config.RoleArchitect].Interval; got != 6*time.Hour {
			t.Errorf("default cadence %v", got)
		}
		return a.newDaemon(cfg, agentRegistry())
	}
	d, err := build("FORGE_ARCHITECT_TOKEN=architect-token-123", "FORGE_ARCHITECT_PASS=architect-pass-123", "FORGE_ADMIN_USERS=alice")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.ledger.Close(); _ = d.logs.Close() }()
	var got []string
	for _, j := range d.sched.Snapshot() {
		got = append(got, j.Project+"/"+j.Role)
	}
	if strings.Join(got, ",") != "example/architect" || slices.Contains(d.unimplemented, "architect") {
		t.Fatalf("jobs %v, unimplemented %v", got, d.unimplemented)
	}
	if _, err := build(); !errors.Is(err, errArchitectFallback) || !strings.Contains(err.Error(), "FORGE_ARCHITECT_TOKEN") {
		t.Fatalf("with the dev bot's token only: %v", err)
	}
}
