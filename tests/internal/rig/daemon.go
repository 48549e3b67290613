package rig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DaemonOptions say how to start `disinto daemon`.
type DaemonOptions struct {
	// Env is added to the installation's environment.
	Env []string
	// Listen and StatusListen, when set, are the --listen and
	// --status-listen flags.
	Listen, StatusListen string
	// Grace is the --grace flag: how long running sessions may finish
	// after SIGTERM.
	Grace time.Duration
	// Args are more flags.
	Args []string
	// Output receives what the daemon writes on stdout and stderr; a new
	// Output when nil. Several runs may share one.
	Output *Output
}

// Daemon is one run of `disinto daemon`.
type Daemon struct {
	// Cmd is the daemon's process.
	Cmd *exec.Cmd
	// Listen and StatusListen are the addresses it was told to serve on.
	Listen, StatusListen string
	// Out is everything it wrote on stdout and stderr.
	Out  *Output
	data string
	done chan struct{}
	err  error
}

// Start starts the daemon of the installation in a process group of its
// own; t's cleanup kills the group if the daemon still runs then.
func (in *Install) Start(t testing.TB, o DaemonOptions) *Daemon {
	t.Helper()
	d := &Daemon{Listen: o.Listen, StatusListen: o.StatusListen, Out: o.Output, data: in.Data, done: make(chan struct{})}
	if d.Out == nil {
		d.Out = &Output{}
	}
	args := []string{"daemon", "--grace", o.Grace.String()}
	if o.Listen != "" {
		args = append(args, "--listen", o.Listen)
	}
	if o.StatusListen != "" {
		args = append(args, "--status-listen", o.StatusListen)
	}
	d.Cmd = exec.Command(in.Bin, append(append(args, o.Args...), in.Globals()...)...)
	d.Cmd.Env = append(append([]string{}, in.Env...), o.Env...)
	d.Cmd.Dir = in.Dir
	d.Cmd.Stdout, d.Cmd.Stderr = d.Out, d.Out
	d.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process the daemon left behind holding its output must not keep
	// Wait from seeing the daemon's end.
	d.Cmd.WaitDelay = 5 * time.Second
	if err := d.Cmd.Start(); err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	go func() {
		d.err = d.Cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(d.Kill)
	return d
}

// Exited reports whether the daemon's process has ended.
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Err is how the daemon exited: nil while it runs, or after a clean
// exit.
func (d *Daemon) Err() error {
	if !d.Exited() {
		return nil
	}
	return d.err
}

// Died says why the daemon is gone, with what it wrote, or "" while it
// runs.
func (d *Daemon) Died() string {
	if !d.Exited() {
		return ""
	}
	return fmt.Sprintf("the daemon exited (%v):\n%s", d.err, d.Out.String())
}

// Kill sends SIGKILL to the daemon's process group (not to the sessions
// it started, which live in groups of their own) and waits for its end.
func (d *Daemon) Kill() {
	if d.Exited() {
		return
	}
	_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

// Stop sends SIGTERM and returns how the daemon exited; it fails t when
// the daemon is still running after timeout.
func (d *Daemon) Stop(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if d.Exited() {
		return d.err
	}
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil && !d.Exited() {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-d.done:
		return d.err
	case <-time.After(timeout):
		t.Fatalf("the daemon did not exit within %s of SIGTERM", timeout)
		return nil
	}
}

// Addrs are the addresses a running daemon records in daemon.json: its
// listener and its status listener ("" when it has none of its own).
type Addrs struct {
	PID    int    `json:"pid"`
	Listen string `json:"listen"`
	Status string `json:"status"`
}

// StatusAddr is where the daemon serves /status and /metrics.
func (a Addrs) StatusAddr() string {
	if a.Status != "" {
		return a.Status
	}
	return a.Listen
}

// AwaitAddrs waits until this daemon has written its daemon.json, which
// it does once it listens, and returns the addresses in it; it fails t
// when the daemon exits first.
func (d *Daemon) AwaitAddrs(t testing.TB) Addrs {
	t.Helper()
	var a Addrs
	Await(t, "daemon.json", 2*time.Minute, d.Died, func() bool {
		b, err := os.ReadFile(filepath.Join(d.data, "daemon.json"))
		return err == nil && json.Unmarshal(b, &a) == nil && a.Listen != "" && a.PID == d.Cmd.Process.Pid
	})
	return a
}

// Output is a buffer a process writes to while a test reads it.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
