//go:build unix && !linux && !freebsd

package redistest

import "os/exec"

// tieToParent does nothing here: the system has no parent-death signal, and
// a killed test binary leaves its servers running.
func tieToParent(*exec.Cmd) {}
