package datadir

import "path/filepath"

// The layout package is where the paths are named.
func state(dataDir string) string { return filepath.Join(dataDir, "state") }
