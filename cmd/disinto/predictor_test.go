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

// TestPredictorScheduled: with the real registry the predictor of a
// project is built (its bot falls back to the dev bot's token), scheduled
// every 24 hours by default, and implemented; its formula is among the
// factory's formulas an exploit may name.
func TestPredictorScheduled(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
		env:         []string{"AGENT_ROLES=predictor", "FORGE_TOKEN=dev-token-123", "FORGE_USER=dev-bot", "FORGE_PASS=dev-pass-123"},
		projectsDir: filepath.Join(dir, "projects"), envFile: filepath.Join(dir, "none"), dataDir: sessionDataDir(t)}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Projects[0].Roles[config.RolePredictor].Interval; got != 24*time.Hour {
		t.Errorf("default cadence %v", got)
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
	if strings.Join(got, ",") != "example/predictor" || slices.Contains(d.Status().Unimplemented, "predictor") {
		t.Fatalf("jobs %v, unimplemented %v", got, d.Status().Unimplemented)
	}
	if !slices.Contains(factoryFormulas(), "run-predictor") {
		t.Errorf("factory formulas %v", factoryFormulas())
	}
}
