//go:build !linux

package flock

import "os"

// Holder would name the process that holds the lock on file; only Linux
// lists lock holders (/proc/locks), so elsewhere it returns pid 0, not
// known.
func Holder(*os.File) (pid int, name string) { return 0, "" }
