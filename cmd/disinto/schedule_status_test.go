package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/scheduler"
)

// TestOfflineStatusShowsCadence: without a daemon, status reads the
// cadence of each job from the project files.
func TestOfflineStatusShowsCadence(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "widgets.toml"),
		"name = \"widgets\"\nrepo = \"o/widgets\"\n[roles.planner]\nschedule = \"30 3 * * *\"\n")
	data := t.TempDir()
	store, err := scheduler.OpenStore(filepath.Join(data, "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	last := time.Date(2026, 3, 1, 3, 30, 0, 0, time.UTC)
	for _, key := range []string{"widgets/planner", "widgets/dev"} {
		if err := store.Put(key, scheduler.JobState{LastDue: last, LastStart: last, LastEnd: last}); err != nil {
			t.Fatal(err)
		}
	}
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, projectsDir: filepath.Join(dir, "projects"),
		envFile: filepath.Join(dir, "none"), dataDir: data}
	rep, err := a.offlineStatus()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.WriteText(&out, false)
	for _, want := range []string{"widgets planner yes 30 3 * * *", "widgets dev yes every 5m"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
