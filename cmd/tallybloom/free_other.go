//go:build !(linux || darwin || freebsd)

package main

// freeBytes does not know the room left on this system.
func freeBytes(string) (uint64, bool) { return 0, false }
