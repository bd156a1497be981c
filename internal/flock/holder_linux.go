package flock

import (
	"bufio"
	"fmt"
	"os"
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
	dev := uint64(st.Dev) // uint32 on some Linux platforms
	inode := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer locks.Close()
	lines := bufio.NewScanner(locks)
	for lines.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9979570 0 EOF"; a lock
		// waited for has "->" after the number, and Lock never waits.
		f := strings.Fields(lines.Text())
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != inode {
			continue
		}
		if pid, err = strconv.Atoi(f[4]); err != nil || pid <= 0 {
			return 0, ""
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return pid, strings.TrimSpace(string(comm))
	}
	return 0, ""
}
