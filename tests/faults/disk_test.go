package faults

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestDiskFull runs the data dir on a small tmpfs the test mounts, fills
// it as an issue comes to be worked, and frees it again: the daemon stays
// up through the failures, says them, and the issue ends merged, or
// blocked with the step that kept failing named.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	data := sandboxtest.Dir(t, "data")
	if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=48m,mode=0711"); err != nil {
		t.Fatalf("mount a tmpfs on the data dir (the suite runs as root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(data, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount the data dir: %v", err)
		}
	})
	w := newWorld(t, setup{data: data}, approve(), implement("dev", "widget.txt", "a widget"))
	d := w.start()
	rig.Await(t, "the daemon ready", time.Minute, w.died, func() bool {
		code, _ := get(t, "http://"+d.StatusListen+"/readyz")
		return code == http.StatusOK
	})
	// Full before the issue comes: its clone, worktree and state need the
	// disk.
	filler := filepath.Join(data, "filler")
	fill(t, filler)
	n := w.backlog("Add a widget", "dev")
	// Several runs meet the full disk before it is freed.
	rig.Await(t, "the daemon meeting the full disk", 2*time.Minute, w.died, func() bool {
		return strings.Count(strings.ToLower(w.output()), "no space left on device") >= 3
	})
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	w.converge("data dir full", n, outcome{merged: true, file: "widget.txt", line: "a widget",
		orBlocked: []ledger.Code{"engine.session_start", "engine.after_session"}}, 4*time.Minute)
	w.checkStreakLines()
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the data dir: %v", err)
			}
			return
		}
	}
}
