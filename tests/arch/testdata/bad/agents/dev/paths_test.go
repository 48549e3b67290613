package dev

import "path/filepath"

// Tests build data dirs of older layouts on purpose.
func oldState(dataDir string) string { return filepath.Join(dataDir, "state") }
