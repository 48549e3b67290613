package git

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGitDiesWithTheDaemon: a git started the way lib/git starts it
// (killGroup) by a process that is then SIGKILLed does not outlive it.
func TestGitDiesWithTheDaemon(t *testing.T) {
	if os.Getenv("DISINTO_GIT_DEATHSIG_HELPER") == "1" {
		deathsigHelper()
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestGitDiesWithTheDaemon$")
	helper.Env = append(os.Environ(), "DISINTO_GIT_DEATHSIG_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = helper.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "git pid "))
	if err != nil {
		_ = helper.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("git %d is not running before its parent dies", pid)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("git %d outlived its SIGKILLed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deathsigHelper starts a git that waits on a child of its own (an alias
// running sleep, which holds none of the helper's pipes), says its pid
// and waits to be killed.
func deathsigHelper() {
	cmd := exec.CommandContext(context.Background(), "git", "-c", "alias.wait=!sleep 20", "wait")
	killGroup(cmd, nil)
	if err := cmd.Start(); err != nil {
		os.Exit(2)
	}
	fmt.Printf("git pid %d\n", cmd.Process.Pid)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// alive reports whether pid runs (a zombie waiting to be reaped is dead).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}
