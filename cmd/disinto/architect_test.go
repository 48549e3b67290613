package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
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
	build := func(env ...string) (*daemon.Daemon, error) {
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
	defer func() { _ = d.Ledger.Close(); _ = d.Logs.Close() }()
	var got []string
	for _, j := range d.Scheduler().Snapshot() {
		got = append(got, j.Project+"/"+j.Role)
	}
	if strings.Join(got, ",") != "example/architect" || slices.Contains(d.Status().Unimplemented, "architect") {
		t.Fatalf("jobs %v, unimplemented %v", got, d.Status().Unimplemented)
	}
	// With the dev bot's token only, the architect is left out and says
	// why; the daemon starts.
	d2, err := build()
	if err != nil {
		t.Fatalf("with the dev bot's token only: %v", err)
	}
	defer func() { _ = d2.Ledger.Close(); _ = d2.Logs.Close() }()
	if jobs := d2.Scheduler().Snapshot(); len(jobs) != 0 || len(d2.Status().NotScheduled) != 1 ||
		!strings.Contains(d2.Status().NotScheduled[0], "FORGE_ARCHITECT_TOKEN") {
		t.Fatalf("with the dev bot's token only: jobs %v, not scheduled %v", jobs, d2.Status().NotScheduled)
	}
}

// TestArchitectOfflineStatus: with no daemon running, status lists each
// open sprint of the architect's record with its stage.
func TestArchitectOfflineStatus(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "alpha.toml"), "name = \"alpha\"\nrepo = \"acme/alpha\"\n")
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "state", "alpha", "architect", "sprints.json"),
		`{"prs": {"12": {"vision": 5, "branch": "architect/sprint-vision-5", "stage": "awaiting decision"},
		          "9": {"vision": 4, "branch": "architect/sprint-vision-4", "stage": "merged"}}}`)
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, projectsDir: filepath.Join(dir, "projects"),
		envFile: filepath.Join(dir, "none"), dataDir: data}
	rep, err := a.offlineStatus()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.InFlight) != 1 || rep.InFlight[0].PR != 12 || rep.InFlight[0].Issue != 5 || rep.InFlight[0].Stage != "sprint awaiting decision" {
		t.Fatalf("in flight %+v", rep.InFlight)
	}
	var out bytes.Buffer
	rep.WriteText(&out, false)
	if !strings.Contains(out.String(), "architect") || !strings.Contains(out.String(), "#12") {
		t.Errorf("status:\n%s", out.String())
	}
}
