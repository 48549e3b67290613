package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Console logs of the daemon and of one-shot runs go to files and
// container logs: no ANSI colours unless stderr is a terminal.
func TestColorTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f} {
		if colorTerminal(w) {
			t.Errorf("%s: colours on a non-terminal", name)
		}
	}
}
