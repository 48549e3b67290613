//go:build !unix

package git

import "os/exec"

// killGroup leaves cmd as it is: process groups are a unix feature, and
// exec.CommandContext still kills git itself.
func killGroup(*exec.Cmd, *User) {}
