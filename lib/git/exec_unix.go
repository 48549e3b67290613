//go:build unix

package git

import (
	"os/exec"
	"syscall"
)

// killGroup runs cmd in its own process group and makes cancellation kill
// the whole group, so helpers git starts (remote-https, ssh, hooks) die with
// it instead of holding its output pipes open. Where the kernel allows,
// git also dies with the daemon (dieWithParent).
func killGroup(cmd *exec.Cmd, runAs *User) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if runAs != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: runAs.UID, Gid: runAs.GID, Groups: []uint32{}}
	}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
