package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeLogLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := from; i < to; i++ {
		fmt.Fprintf(f, `{"level":"info","agent":"dev","time":"2026-01-01T00:00:%02dZ","message":"line-%d"}`+"\n", i, i)
	}
}

// The follower must print every line exactly once when the log file is
// rotated between two scans (renamed to a backup that still matches
// *.log, a fresh file started under the old name).
func TestLogTailFollowsAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	cur := filepath.Join(dir, "dev.log")
	writeLogLines(t, cur, 0, 3)
	var out bytes.Buffer
	tl := &logTail{dir: dir, out: &out}
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	// More lines land in the old file, then it is rotated the way
	// lumberjack does it, and the new file grows past the old offset.
	writeLogLines(t, cur, 3, 5)
	if err := os.Rename(cur, filepath.Join(dir, "dev-2026-01-01T00-00-05.000.log")); err != nil {
		t.Fatal(err)
	}
	writeLogLines(t, cur, 5, 12)
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	writeLogLines(t, cur, 12, 13)
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	for i := range 13 {
		if n := strings.Count(out.String(), fmt.Sprintf("line-%d\n", i)); n != 1 {
			t.Errorf("line-%d printed %d times; output:\n%s", i, n, out.String())
		}
	}
}

// A file listed by one scan may be renamed or pruned by rotation before
// it is opened; following must go on.
func TestLogTailFileGoneBetweenListAndOpen(t *testing.T) {
	dir := t.TempDir()
	tl := &logTail{dir: dir, out: &bytes.Buffer{}}
	got, err := tl.read(filepath.Join(dir, "dev.log"), nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("read of a vanished file = %v, %v; want nothing and no error", got, err)
	}
}
