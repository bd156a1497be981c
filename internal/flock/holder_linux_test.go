package flock

import (
	"fmt"
	"io"
	"os"
	"os/exec"
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
// a process that does not have the file open is not taken for it, nor is
// this process, which has it open only to ask.
func TestHolderInMatchesAcrossDevices(t *testing.T) {
	file, _ := twoOpenFiles(t)
	info, err := file.Stat()
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	dev := uint64(st.Dev)
	exact := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	elsewhere := fmt.Sprintf("00:99:%d", st.Ino)
	line := func(n int, kind string, pid int, inode string) string {
		return fmt.Sprintf("%d: %s  ADVISORY  WRITE %d %s 0 EOF", n, kind, pid, inode)
	}
	listing := func(lines ...string) io.Reader { return strings.NewReader(strings.Join(lines, "\n") + "\n") }
	never := func(int, *syscall.Stat_t) bool { t.Error("asked about open files"); return false }
	// A child process that has the file open, as a holder elsewhere would.
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{file}
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	me, other := os.Getpid(), child.Process.Pid

	assert.Equal(t, 4242, holderIn(listing(line(1, "FLOCK", 4242, exact)), st, never))
	assert.Equal(t, 4242, holderIn(listing(line(1, "FLOCK", other, elsewhere), line(2, "FLOCK", 4242, exact)), st, never),
		"the listing's own device first")
	assert.Equal(t, other, holderIn(listing(line(1, "FLOCK", other, elsewhere)), st, hasOpen),
		"a process with the file open")
	assert.Zero(t, holderIn(listing(line(1, "FLOCK", 1, elsewhere)), st, hasOpen),
		"process 1 does not have the file open")
	assert.Zero(t, holderIn(listing(line(1, "FLOCK", me, elsewhere)), st, hasOpen),
		"this process has it open only to ask")
	assert.Zero(t, holderIn(listing(
		line(1, "POSIX", 4242, exact),     // not a flock
		line(2, "-> FLOCK", 4243, exact),  // waiting for one
		line(3, "FLOCK", -1, exact),       // a holder this namespace cannot see
		line(4, "FLOCK", 4244, exact+"1"), // another inode whose number ends the same
	), st, never))
}
