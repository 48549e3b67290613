//go:build unix && !linux

package git

import "syscall"

// dieWithParent does nothing where the kernel has no parent-death signal;
// cancellation still kills git's process group.
func dieWithParent(*syscall.SysProcAttr) {}
