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
)

// TestPlannerScheduled: with the real registry the planner of a project
// is built (its bot falls back to the dev bot's token), scheduled every
// 12 hours by default, implemented, and a project file's cadence
// replaces the default.
func TestPlannerScheduled(t *testing.T) {
	for _, tt := range []struct {
		name, interval string
		want           time.Duration
	}{
		{"default", "", 12 * time.Hour},
		{"project file", "interval = \"6h\"\n", 6 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			example, err := os.ReadFile("../../projects/example.toml.example")
			if err != nil {
				t.Fatal(err)
			}
			const section = "[roles.planner]\nenabled = true\ninterval = \"12h\"\n"
			if !strings.Contains(string(example), section) {
				t.Fatalf("the example's planner section is not %q", section)
			}
			text := strings.Replace(string(example), section, "[roles.planner]\nenabled = true\n"+tt.interval, 1)
			writeFile(t, filepath.Join(dir, "projects", "example.toml"), text)
			a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
				env:         []string{"AGENT_ROLES=planner", "FORGE_TOKEN=dev-token-123", "FORGE_USER=dev-bot", "FORGE_PASS=dev-pass-123"},
				projectsDir: filepath.Join(dir, "projects"), envFile: filepath.Join(dir, "none"), dataDir: sessionDataDir(t)}
			cfg, err := a.loadConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Projects[0].Roles[config.RolePlanner].Interval; got != tt.want {
				t.Errorf("cadence %v, want %v", got, tt.want)
			}
			d, err := a.newDaemon(cfg, agentRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.Ledger.Close(); _ = d.Logs.Close() }()
			var got []string
			for _, j := range d.Scheduler().Snapshot() {
				got = append(got, j.Project+"/"+j.Role)
			}
			if strings.Join(got, ",") != "example/planner" || slices.Contains(d.Status().Unimplemented, "planner") {
				t.Fatalf("jobs %v, unimplemented %v", got, d.Status().Unimplemented)
			}
		})
	}
}
