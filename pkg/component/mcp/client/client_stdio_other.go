//go:build !unix

package client

import "os/exec"

// ownProcessGroup has no process groups to manage on this platform: closing the
// session terminates the direct child only.
func ownProcessGroup(cmd *exec.Cmd) func() {
	return func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}
}
