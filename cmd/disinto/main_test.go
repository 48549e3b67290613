package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb, env)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestVersionAndUsage(t *testing.T) {
	if code, out, _ := runCLI(t, nil, "version"); code != exitOK || !strings.HasPrefix(out, "disinto ") {
		t.Errorf("version: code %d, out %q", code, out)
	}
	if code, _, errOut := runCLI(t, nil, "no-such-command"); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: code %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCLI(t, nil, "config", "check", "--no-such-flag"); code != exitUsage {
		t.Errorf("unknown flag: code %d", code)
	}
	if code, _, _ := runCLI(t, nil, "version", "extra"); code != exitUsage {
		t.Errorf("extra argument: code %d", code)
	}
}

func TestConfigCheckExample(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "example.toml"), string(data))
	writeFile(t, filepath.Join(dir, "empty.env"), "")
	code, out, errOut := runCLI(t, nil, "config", "check", "--projects-dir", dir, "--env-file", filepath.Join(dir, "empty.env"),
		"--data-dir", filepath.Join(dir, "data"))
	if code != exitOK {
		t.Fatalf("code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "example") {
		t.Errorf("output does not name the project: %q", out)
	}
}

func TestConfigCheckProblems(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown key", map[string]string{"a.toml": ok + "colour = \"red\"\n"}, "a.toml:3: colour: unknown key"},
		{"wrong type", map[string]string{"a.toml": ok + "[ci]\nwoodpecker_repo_id = \"ten\"\n"}, "a.toml:4: ci.woodpecker_repo_id: want an integer, got a string"},
		{"missing repo", map[string]string{"a.toml": "name = \"a\"\n"}, "a.toml: repo: required key is missing"},
		{"bad URL", map[string]string{"a.toml": ok + "forge_url = \"not a url\"\n"}, "a.toml:3: forge_url:"},
		{"duplicate name", map[string]string{"a.toml": ok, "b.toml": "name = \"a\"\nrepo = \"o/b\"\n"}, "b.toml:1: name: project \"a\" is already defined in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, filepath.Join(dir, name), content)
			}
			code, out, _ := runCLI(t, nil, "config", "check", "--projects-dir", dir, "--env-file", filepath.Join(dir, ".env"))
			if code != exitFailure {
				t.Fatalf("code %d, want 1; stdout %q", code, out)
			}
			if !strings.Contains(out, filepath.Join(dir, "")) || !strings.Contains(out, tt.want) {
				t.Errorf("stdout %q does not contain %q", out, tt.want)
			}
		})
	}
}

func TestConfigCheckEnvOverridesFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.toml"), "name = \"a\"\nrepo = \"o/a\"\n")
	writeFile(t, filepath.Join(dir, ".env"), "AGENT_ROLES=nonsense\n")
	if code, out, _ := runCLI(t, nil, "config", "check", "--projects-dir", dir, "--env-file", filepath.Join(dir, ".env")); code != exitFailure || !strings.Contains(out, "AGENT_ROLES") {
		t.Errorf("bad env file value: code %d, stdout %q", code, out)
	}
	if code, _, errOut := runCLI(t, []string{"AGENT_ROLES=dev"}, "config", "check", "--projects-dir", dir, "--env-file", filepath.Join(dir, ".env")); code != exitOK {
		t.Errorf("process env must win over the env file: code %d, stderr %q", code, errOut)
	}
}

// TestExitCodes: the type of an error decides the exit code, for each
// command's usage and failure paths: 2 for how it was called, 1 for what
// went wrong while it ran.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), string(data))
	global := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none.env"),
		"--data-dir", filepath.Join(dir, "data")}
	for _, tc := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"--version"}, exitOK, "disinto "},
		{[]string{"config", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"agent", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"status", "extra"}, exitUsage, "unknown command"},
		{[]string{"run", "dev"}, exitUsage, "--project is required"},
		{[]string{"run", "nope", "--project", "example"}, exitUsage, "nope"},
		{[]string{"run", "dev", "--project", "nope"}, exitUsage, `unknown project "nope"`},
		{[]string{"run", "dev", "extra", "--project", "example"}, exitUsage, "accepts 1 arg"},
		{[]string{"agent", "pause", "dev", "--project", "nope"}, exitUsage, `unknown project "nope"`},
		{[]string{"agent", "pause", "nope"}, exitUsage, "nope"},
		{[]string{"agent", "pause", "dev", "--project", "example"}, exitOK, "dev paused for project example"},
		{[]string{"agent", "resume", "dev", "--project", "example"}, exitOK, "dev resumed"},
		{[]string{"logs", "--no-such-flag"}, exitUsage, "unknown flag"},
		// An error while running that merely reads like a usage error is
		// a failure, not a usage error.
		{[]string{"config", "check", "--projects-dir", filepath.Join(dir, "invalid argument")}, exitFailure, "invalid argument"},
	} {
		code, out, errOut := runCLI(t, nil, append(append([]string{}, tc.args...), global...)...)
		if tc.args[0] == "config" && len(tc.args) > 2 {
			code, out, errOut = runCLI(t, nil, tc.args...)
		}
		if code != tc.want || !strings.Contains(out+errOut, tc.says) {
			t.Errorf("disinto %s: code %d, want %d saying %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.want, tc.says, out, errOut)
		}
	}
}

// Every command the user runs shows examples in its help.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch c.Name() {
		case "help", "completion", "__complete", "__completeNoDesc":
			return
		}
		if c.Runnable() && c.HasParent() && !c.Hidden && c.Example == "" {
			t.Errorf("%q has no examples in its help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCmd())
}

// sessionDataDir is a data dir that session users can reach, as the
// daemon requires when it runs as root.
func sessionDataDir(t testing.TB) string { return sandboxtest.Dir(t, "data") }
