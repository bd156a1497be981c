package flock

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Holder names the process that holds the lock on file's inode, as
// /proc/locks lists it: its pid and its command's name. It returns pid 0
// where it cannot tell: no such lock is listed (its holder just let it go,
// say), or the holder is outside this process's pid namespace.
func Holder(file *os.File) (pid int, name string) {
	info, err := file.Stat()
	if err != nil {
		return 0, ""
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, ""
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer locks.Close()
	if pid = holderIn(locks, st, hasOpen); pid == 0 {
		return 0, ""
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return pid, strings.TrimSpace(string(comm))
}

// holderIn finds, in a listing of /proc/locks, the pid holding a flock on
// the file st describes. A lock is listed by the device of its inode's file
// system and the inode's number, and the listing's device is taken first.
// Some file systems (btrfs subvolumes, overlayfs) give stat another device
// than the listing; failing a match, a lock of the same inode number on
// another device counts where opens, asked, says that its process has the
// file open. This process is never taken so: it has the file open to ask.
func holderIn(locks io.Reader, st *syscall.Stat_t, opens func(pid int, st *syscall.Stat_t) bool) int {
	dev := uint64(st.Dev) // uint32 on some Linux platforms
	exact := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	number := fmt.Sprintf(":%d", st.Ino)
	var elsewhere []int // holders of the inode's number on another device
	lines := bufio.NewScanner(locks)
	for lines.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9979570 0 EOF"; a lock
		// waited for has "->" after the number, and Lock never waits.
		f := strings.Fields(lines.Text())
		if len(f) < 6 || f[1] != "FLOCK" || !strings.HasSuffix(f[5], number) {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		switch {
		case err != nil || pid <= 0:
		case f[5] == exact:
			return pid
		case pid != os.Getpid():
			elsewhere = append(elsewhere, pid)
		}
	}
	for _, pid := range elsewhere {
		if opens(pid, st) {
			return pid
		}
	}
	return 0
}

// hasOpen reports whether process pid has the file st describes open, as
// far as this process may look at its descriptors.
func hasOpen(pid int, st *syscall.Stat_t) bool {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	for _, e := range entries {
		var other syscall.Stat_t
		if syscall.Stat(filepath.Join(fds, e.Name()), &other) == nil && other.Dev == st.Dev && other.Ino == st.Ino {
			return true
		}
	}
	return false
}
