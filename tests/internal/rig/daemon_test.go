package rig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stand is an installation whose binary is a shell script standing in for
// disinto: it says its arguments, writes daemon.json with its pid and
// leaves on SIGTERM.
func stand(t *testing.T) *Install {
	t.Helper()
	dir := t.TempDir()
	in := &Install{Bin: filepath.Join(dir, "disinto"), Dir: dir, Projects: filepath.Join(dir, "projects"),
		EnvFile: filepath.Join(dir, ".env"), Data: filepath.Join(dir, "data"), Env: []string{"PATH=" + os.Getenv("PATH")}}
	script := `#!/bin/sh
echo "args: $*"
echo "greeting: $GREETING" >&2
trap 'echo bye; exit 0' TERM
mkdir -p "` + in.Data + `"
printf '{"pid":%d,"listen":"127.0.0.1:1"}' $$ > "` + in.Data + `/daemon.json"
while :; do sleep 0.05; done
`
	if err := os.WriteFile(in.Bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return in
}

func TestDaemonStartAwaitStop(t *testing.T) {
	in := stand(t)
	d := in.Start(t, DaemonOptions{Env: []string{"GREETING=hello"}, Listen: "127.0.0.1:1", Grace: 2 * time.Second})
	if a := d.AwaitAddrs(t); a.StatusAddr() != "127.0.0.1:1" || a.PID != d.Cmd.Process.Pid {
		t.Errorf("addresses %+v", a)
	}
	if why := d.Died(); why != "" {
		t.Errorf("a running daemon died: %s", why)
	}
	if err := d.Stop(t, 10*time.Second); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	out := d.Out.String()
	for _, want := range []string{"args: daemon --grace 2s --listen 127.0.0.1:1 --projects-dir " + in.Projects, "greeting: hello", "bye"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if d.Died() == "" {
		t.Error("a stopped daemon does not say it died")
	}
}

func TestDaemonKillSharesOutput(t *testing.T) {
	in := stand(t)
	out := &Output{}
	first := in.Start(t, DaemonOptions{Grace: time.Second, Output: out})
	first.AwaitAddrs(t)
	first.Kill()
	if !first.Exited() || first.Err() == nil {
		t.Fatalf("after SIGKILL: exited %v, err %v", first.Exited(), first.Err())
	}
	second := in.Start(t, DaemonOptions{Grace: time.Second, Output: out})
	second.AwaitAddrs(t)
	second.Kill()
	if n := strings.Count(out.String(), "args: daemon"); n != 2 {
		t.Errorf("the shared output has %d runs, want 2:\n%s", n, out.String())
	}
}

func TestRun(t *testing.T) {
	in := stand(t)
	in.Bin = "/bin/echo"
	if out := in.MustRun(t, nil, "status"); out != "status "+strings.Join(in.Globals(), " ")+"\n" {
		t.Errorf("output %q", out)
	}
}
