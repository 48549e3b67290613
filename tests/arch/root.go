package arch

import (
	"os"
	"path/filepath"
	"strings"
)

// compositionRoot is the command package: the CLI, the role table's
// constructors and nothing of the daemon's runtime (lib/daemon).
const compositionRoot = "cmd/disinto"

// MaxRootFiles is how many non-test Go files the composition root may
// hold: past it, runtime is growing back into package main.
const MaxRootFiles = 25

// RootFiles lists the non-test Go files of the composition root under
// root.
func RootFiles(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, compositionRoot))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	return out, nil
}
