//go:build !unix

package client

import (
	"errors"
	"os"
	"os/exec"
)

// ownProcessGroup has no process groups to manage on this platform: closing the
// session terminates the direct child only.
func ownProcessGroup(cmd *exec.Cmd) func() {
	return func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}
}

// terminate cannot ask p to exit on this platform (no SIGTERM): the caller kills it.
func terminate(*os.Process) error { return errors.New("no SIGTERM on this platform") }
