//go:build linux || darwin || freebsd

package main

import "golang.org/x/sys/unix"

// freeBytes is the room the file system of dir gives an unprivileged
// process, where the system says.
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || int64(st.Bavail) < 0 {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
