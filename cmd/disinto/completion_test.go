package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Completion offers the roles for a <role> argument and the projects of
// the projects dir for --project (cobra's hidden __complete command is
// what the shell scripts call).
func TestCompletionOffersRolesAndProjects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "widgets.toml"), "name = \"widgets\"\n")
	writeFile(t, filepath.Join(dir, "other.toml"), "name = \"gadgets\"\nrepo = 3\n")
	code, out, errOut := runCLI(t, nil, "__complete", "run", "")
	if code != exitOK {
		t.Fatalf("complete run: exit %d: %s", code, errOut)
	}
	for _, role := range []string{"dev", "review", "gardener", "supervisor"} {
		if !strings.Contains(out, role+"\n") {
			t.Errorf("roles offered for run: %q, want %s", out, role)
		}
	}
	for _, args := range [][]string{{"run", "dev", "--project", ""}, {"agent", "pause", "dev", "--project", ""}} {
		code, out, errOut = runCLI(t, nil, append([]string{"--projects-dir", dir, "__complete"}, args...)...)
		if code != exitOK {
			t.Fatalf("complete %v: exit %d: %s", args, code, errOut)
		}
		if !strings.HasPrefix(out, "gadgets\nwidgets\n") {
			t.Errorf("projects offered for %v: %q, want gadgets and widgets", args, out)
		}
	}
	if code, out, _ := runCLI(t, nil, "completion", "bash"); code != exitOK || !strings.Contains(out, "__start_disinto") {
		t.Errorf("completion bash: exit %d, %d bytes", code, len(out))
	}
}
