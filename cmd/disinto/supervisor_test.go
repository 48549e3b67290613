package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `disinto run supervisor --once` runs the supervisor through the
// registry: with the forge down it still checks the host and journals
// locally, and exits 0.
func TestRunSupervisorOnce(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	file := strings.Replace(string(example), `forge_url = "http://localhost:3000"`, `forge_url = "http://127.0.0.1:1"`, 1)
	if file == string(example) {
		t.Fatal("example project file has no forge_url line to replace")
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), file)
	data := sessionDataDir(t)
	env := []string{"FORGE_TOKEN=tok-supervisor-test", "DISINTO_ALLOW_UNISOLATED_SESSIONS=1"}
	code, _, errOut := runCLI(t, env, "run", "supervisor", "--project", "example", "--once",
		"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", data)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	day := time.Now().UTC().Format("2006-01-02")
	journal, err := os.ReadFile(filepath.Join(data, "state", "example", "supervisor", "supervisor-journal", day+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Supervisor run — ", "- Memory: ", "Forge: unreachable", "Containers: not observable"} {
		if !strings.Contains(string(journal), want) {
			t.Errorf("journal lacks %q:\n%s", want, journal)
		}
	}
	// Status, with no daemon, shows the run's open findings.
	code, out, _ := runCLI(t, env, "status", "--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", data)
	if code != exitOK || !strings.Contains(out, "supervisor findings:") || !strings.Contains(out, "example [info] containers not observable") {
		t.Errorf("status: %d\n%s", code, out)
	}
}
