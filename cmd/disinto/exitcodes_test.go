package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command the user runs exits 2 for a flag it does not know and for
// an argument it does not take, whatever the command does.
func TestEveryCommandsUsageExitsTwo(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		switch c.Name() {
		case "help", "__complete", "__completeNoDesc":
			return
		}
		if c.HasParent() && !c.Hidden {
			paths = append(paths, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk((&app{}).rootCmd(), nil)
	if len(paths) < 10 {
		t.Fatalf("walked %d commands: %v", len(paths), paths)
	}
	for _, p := range paths {
		args := append(append([]string(nil), p...), "--no-such-flag")
		if code, _, errOut := runCLI(t, nil, args...); code != exitUsage || !strings.Contains(errOut, "no-such-flag") {
			t.Errorf("disinto %s: exit %d, stderr %q; want 2 naming the flag", strings.Join(args, " "), code, errOut)
		}
	}
}

// Each command's failure (it was called right, and what it does failed)
// exits 1, with its one-line reason; a usage error exits 2.
func TestExitCodesOfFailures(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "projects")
	writeFile(t, filepath.Join(bad, "x.toml"), "name = 3\n")
	badFormula := filepath.Join(dir, "bad.toml")
	writeFile(t, badFormula, "this is = = not toml\n")
	writeFile(t, filepath.Join(dir, "data", "agents.json"), "{not json")
	data := filepath.Join(dir, "data")
	env := filepath.Join(dir, "env")
	writeFile(t, env, "")
	common := []string{"--projects-dir", bad, "--env-file", env, "--data-dir", data}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"config", "check"}, exitFailure},
		{[]string{"daemon"}, exitFailure},
		{[]string{"run", "dev", "--project", "x"}, exitFailure},
		{[]string{"run", "nope", "--project", "x"}, exitUsage},
		{[]string{"run", "dev"}, exitUsage},
		{[]string{"formula", "lint", badFormula}, exitFailure},
		{[]string{"formula", "render", "no-such-formula"}, exitUsage},
		{[]string{"formula", "render"}, exitUsage},
		{[]string{"logs", "--data-dir", filepath.Join(dir, "nowhere")}, exitFailure},
		{[]string{"logs", "--level", "loud"}, exitUsage},
		{[]string{"agent", "pause", "nope"}, exitUsage},
		{[]string{"agent", "pause", "dev", "--project", "nope"}, exitFailure},
		{[]string{"agent", "list"}, exitFailure},
		{[]string{"init", "--yes", "--forge-url", "http://127.0.0.1:1", "--wait-forge", "1ms", "--admin-user", "root", "--admin-password", "a-chosen-passw0rd", "acme/widgets"}, exitFailure},
		{[]string{"init", "--yes", "--forge-url", "http://127.0.0.1:1", "acme/widgets"}, exitUsage},
		{[]string{"version", "extra"}, exitUsage},
		{[]string{"status", "extra"}, exitUsage},
	} {
		code, _, errOut := runCLI(t, nil, append(append([]string(nil), common...), tc.args...)...)
		if code != tc.want {
			t.Errorf("disinto %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.want, errOut)
			continue
		}
		if lines := strings.Split(strings.TrimSpace(errOut), "\n"); errOut == "" || len(lines[0]) == 0 {
			t.Errorf("disinto %s: exit %d without a reason on stderr", strings.Join(tc.args, " "), code)
		}
	}
}
