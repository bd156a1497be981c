//go:build linux || freebsd

package redistest

import (
	"os/exec"
	"syscall"
)

func tieToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
