package flock

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestHolderNamesTheProcessHoldingTheLock(t *testing.T) {
	holder, other := twoOpenFiles(t)

	pid, _ := Holder(other)
	assert.Zero(t, pid, "nobody holds the lock yet")

	require.NoError(t, Lock(holder))
	require.ErrorIs(t, Lock(other), ErrHeld)
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	pid, name := Holder(other)
	assert.Equal(t, os.Getpid(), pid)
	assert.Equal(t, strings.TrimSpace(string(comm)), name)

	// A lock on another file is not this one's.
	unrelated, err := os.Create(filepath.Join(t.TempDir(), "g"))
	require.NoError(t, err)
	defer unrelated.Close()
	pid, _ = Holder(unrelated)
	assert.Zero(t, pid)

	require.NoError(t, Unlock(holder))
	pid, _ = Holder(other)
	assert.Zero(t, pid, "the lock is gone")
}

// A file system whose stat gives another device than /proc/locks still
// has its holder found, by the inode's number and the holder's open files;
// a process that does not have the file open is not taken for it.
func TestHolderInMatchesAcrossDevices(t *testing.T) {
	file, _ := twoOpenFiles(t)
	info, err := file.Stat()
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	dev := uint64(st.Dev)
	exact := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	elsewhere := fmt.Sprintf("00:99:%d", st.Ino)
	never := func(int, *syscall.Stat_t) bool { t.Error("asked about open files"); return false }
	listing := func(lines ...string) io.Reader { return strings.NewReader(strings.Join(lines, "\n") + "\n") }
	me := os.Getpid()

	assert.Equal(t, 4242, holderIn(listing("1: FLOCK  ADVISORY  WRITE 4242 "+exact+" 0 EOF"), st, never))
	assert.Equal(t, me, holderIn(listing(fmt.Sprintf("1: FLOCK  ADVISORY  WRITE %d %s 0 EOF", me, elsewhere)), st, hasOpen),
		"this process has the file open")
	assert.Zero(t, holderIn(listing("1: FLOCK  ADVISORY  WRITE 1 "+elsewhere+" 0 EOF"), st, hasOpen),
		"process 1 does not have the file open")
	assert.Zero(t, holderIn(listing(
		"1: POSIX  ADVISORY  WRITE 4242 "+exact+" 0 EOF",               // not a flock
		"2: -> FLOCK  ADVISORY  WRITE 4243 "+exact+" 0 EOF",            // waiting for one
		"3: FLOCK  ADVISORY  WRITE -1 "+exact+" 0 EOF",                 // a holder this namespace cannot see
		fmt.Sprintf("4: FLOCK  ADVISORY  WRITE 4244 %s1 0 EOF", exact), // another inode whose number ends the same
	), st, never))
}
