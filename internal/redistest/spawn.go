//go:build unix

package redistest

import (
	"os/exec"
	"runtime"
	"sync"
)

// A test binary that is killed, by its -timeout or by hand, runs no
// Cleanup. Where the system can (Linux, FreeBSD), each redis-server is
// started to get SIGKILL when the process that started it ends, so that
// none is left behind listening on its port.
//
// Linux sends that signal when the thread that started the child ends, not
// its process, and the Go runtime ends threads when it likes. So every
// server is started from one goroutine locked to its thread for good: the
// thread lives exactly as long as the test binary.

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawns      = make(chan spawn)
	spawnerOnce sync.Once
)

// startTied starts cmd from the spawner's thread, tied to this process.
func startTied(cmd *exec.Cmd) error {
	spawnerOnce.Do(func() { go spawner() })
	tieToParent(cmd)
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawns <- s
	return <-s.done
}

func spawner() {
	runtime.LockOSThread() // never unlocked: the thread must outlive every child
	for s := range spawns {
		s.done <- s.cmd.Start()
	}
}
