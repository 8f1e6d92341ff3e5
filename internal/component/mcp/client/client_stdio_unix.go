//go:build unix

package client

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and returns a function that
// kills that whole group. A stdio server launched through a wrapper (npx, a shell
// script) runs as a grandchild: terminating only the direct child would leave it
// running. The returned function is safe to call before the command started and more
// than once.
func ownProcessGroup(cmd *exec.Cmd) func() {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return func() {
		if cmd.Process == nil {
			return
		}
		// The group id is the leader's pid; a negative pid signals the group. ESRCH
		// (no such group: everything already exited) is the expected outcome.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// terminate asks p to exit (SIGTERM).
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
