//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd && !windows

package seqno

import (
	"fmt"
	"runtime"
)

// CurrentBootID is not available here: a file left dirty always counts as a
// machine crash.
func CurrentBootID() (BootID, error) {
	return BootID{}, fmt.Errorf("%w on %s", ErrNoBootID, runtime.GOOS)
}
