// Package rig runs the built disinto binary for the system suites
// (tests/e2e, tests/security, tests/faults) as an operator does: the
// binary built once per test process, an installation of it (a projects
// dir, an env file, a data dir and an environment), its daemon started,
// awaited and stopped, its one-shot commands run, and the scene its
// daemon works on (a project on a real Gitea with its bots, a project
// file and the scripted model server).
//
// It is test support: only tests import it.
package rig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// mainPackage is what Binary builds.
const mainPackage = "github.com/disinto/disinto/cmd/disinto"

// binary is the disinto binary of this test process, built on first use.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary returns the path of the disinto binary, building it on first use
// (with -race when the tests run with it) into a directory every session
// user may pass through. A suite's TestMain removes it with RemoveBinary.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "disinto-rig-")
		if binary.err != nil {
			return
		}
		if binary.err = os.Chmod(binary.dir, 0o711); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "disinto")
		args := []string{"build", "-o", binary.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		// The test's working directory is its package's, inside the
		// module: the import path names the command from anywhere in it.
		cmd := exec.Command("go", append(args, mainPackage)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build %s: %v\n%s", mainPackage, err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// RemoveBinary removes the binary Binary built, if it built one. Call it
// once every test has ended.
func RemoveBinary() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}
