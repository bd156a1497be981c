//go:build linux

package seqno

import (
	"fmt"
	"os"
)

// CurrentBootID reads the kernel's random boot id, new at every boot.
func CurrentBootID() (BootID, error) {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return BootID{}, fmt.Errorf("%w: %w", ErrNoBootID, err)
	}
	return ParseBootID(string(raw))
}
