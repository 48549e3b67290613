package rig

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Install is disinto as an operator installs it: the binary, a projects
// dir, an env file and a data dir, and the process environment every
// command of it runs with (nothing is inherited from the test process).
type Install struct {
	Bin      string
	Dir      string // the working directory of every command
	Projects string
	EnvFile  string
	Data     string
	Env      []string
}

// New is an installation in dir, which every session user must be able
// to pass through when the daemon runs sessions as root (see
// sandboxtest.Dir): the binary, dir/projects, dir/.env and dir/data, and
// an empty environment.
func New(t testing.TB, dir string) *Install {
	t.Helper()
	return &Install{Bin: Binary(t), Dir: dir,
		Projects: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, ".env"), Data: filepath.Join(dir, "data")}
}

// Globals are the global flags pointing a command at the installation's
// files.
func (in *Install) Globals() []string {
	return []string{"--projects-dir", in.Projects, "--env-file", in.EnvFile, "--data-dir", in.Data}
}

// Command is a disinto command with args and the global flags, run with
// the installation's environment plus env.
func (in *Install) Command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, in.Bin, append(append([]string{}, args...), in.Globals()...)...)
	cmd.Env = append(append([]string{}, in.Env...), env...)
	cmd.Dir = in.Dir
	return cmd
}

// Run runs one command to completion, within three minutes, with env
// added to the installation's environment.
func (in *Install) Run(env []string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := in.Command(ctx, env, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// MustRun is Run that fails t when the command fails; it returns the
// command's standard output.
func (in *Install) MustRun(t testing.TB, env []string, args ...string) string {
	t.Helper()
	out, errOut, err := in.Run(env, args...)
	if err != nil {
		t.Fatalf("disinto %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}
