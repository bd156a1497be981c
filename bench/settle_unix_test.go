//go:build unix

package bench

import "golang.org/x/sys/unix"

// settle writes the dirty pages of every file back (sync(2)) and waits for
// it, so that the kernel does not write back what a benchmark's setup wrote
// while a later benchmark is timed.
func settle() { unix.Sync() }
