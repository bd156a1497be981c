//go:build unix && !linux

package engine

import "fmt"

// openCapped is the child of the address space tests, which run on Linux
// only (they read the process's address space from /proc).
func openCapped(string) int {
	fmt.Println("setup: the capped child runs on Linux only")
	return 1
}
