package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
)

// TestFilerJobScheduled: the filer runs on the architect's cadence when
// it has an identity of its own and the architect is enabled, never as
// the dev bot.
func TestFilerJobScheduled(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	// A cadence of the architect's own, so that the filer's is seen to
	// follow it.
	arch := []byte("[roles.architect]\nenabled = true\ninterval = \"6h\"\n")
	if !bytes.Contains(example, arch) {
		t.Fatal("the example's architect section changed")
	}
	example = bytes.Replace(example, arch, []byte("[roles.architect]\nenabled = true\ninterval = \"3h\"\n"), 1)
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(example))
	reg := daemon.Registry{config.RoleFiler: newFilerAgent,
		config.RoleDev: func(daemon.Deps) (agent.Agent, error) { return sessionAgent{}, nil }}
	dev := []string{"FORGE_TOKEN=t-dev-0123456789", "FORGE_PASS=p-dev"}
	filerBot := []string{"FORGE_FILER_TOKEN=t-filer-0123456789", "FORGE_FILER_PASS=p-filer"}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"dev token only", append([]string{"AGENT_ROLES=dev,architect"}, dev...), "example/dev"},
		{"architect off", append(append([]string{"AGENT_ROLES=dev"}, dev...), filerBot...), "example/dev"},
		{"own identity", append(append([]string{"AGENT_ROLES=dev,architect"}, dev...), filerBot...), "example/dev,example/filer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := testDaemon(t, filepath.Join(dir, "projects"), tc.env, reg)
			var got []string
			for _, j := range d.Scheduler().Snapshot() {
				got = append(got, j.Project+"/"+j.Role)
				if j.Role == string(config.RoleFiler) && j.Interval != 3*time.Hour {
					t.Errorf("filer interval %v, want the architect's 3h", j.Interval)
				}
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("jobs %v, want %s", got, tc.want)
			}
		})
	}
}

// TestRunFilerNeedsItsOwnIdentity: disinto run filer refuses to act as
// the dev bot and says which variable to set.
func TestRunFilerNeedsItsOwnIdentity(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.toml"), "name = \"p\"\nrepo = \"acme/p\"\nops_repo = \"acme/p-ops\"\nforge_url = \"http://127.0.0.1:1\"\n")
	env := filepath.Join(dir, ".env")
	writeFile(t, env, "FORGE_TOKEN=dev-token-0123456789\nFORGE_PASS=dev-pass\n")
	code, _, errOut := runCLI(t, nil, "run", "filer", "--project", "p", "--projects-dir", dir, "--env-file", env, "--data-dir", sessionDataDir(t))
	if code != exitFailure || !strings.Contains(errOut, "FORGE_FILER_TOKEN") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}
