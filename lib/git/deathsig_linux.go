package git

import "syscall"

// dieWithParent asks the kernel to kill git when the daemon dies, even by
// SIGKILL: an orphaned clone or fetch would otherwise go on writing in a
// checkout that the restarted daemon is already using again.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
