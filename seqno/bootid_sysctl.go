//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package seqno

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// CurrentBootID names the running boot from the kernel's sysctls: macOS's
// boot session UUID, new at every boot, and elsewhere, or on a macOS
// without it, the time the kernel records the boot began at (see
// bootTimeID).
func CurrentBootID() (BootID, error) {
	if uuid, err := unix.Sysctl("kern.bootsessionuuid"); err == nil {
		if id, err := ParseBootID(uuid); err == nil {
			return id, nil
		}
	}
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return BootID{}, fmt.Errorf("%w: kern.boottime: %w", ErrNoBootID, err)
	}
	return bootTimeID(int64(tv.Sec), int64(tv.Usec))
}
