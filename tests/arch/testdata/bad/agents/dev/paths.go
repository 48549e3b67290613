package dev

import "path/filepath"

type options struct{ DataDir string }

func stateOf(o options, project string) string {
	return filepath.Join(o.DataDir, "state", project)
}

func projectDir(dataDir, kind, project string, parts ...string) string {
	return filepath.Join(append([]string{dataDir, kind, project}, parts...)...)
}

// Joins on other roots are not the rule's business.
func worktree(clone string) string { return filepath.Join(clone, "wt") }
