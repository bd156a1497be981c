package engine

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// descriptorOf finds the descriptor this process holds on the file at
// path: by its inode, as Create made the file under another name.
func descriptorOf(t *testing.T, path string) int {
	t.Helper()
	var want syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &want))
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			return fd
		}
	}
	t.Fatalf("no descriptor on %s", path)
	return -1
}

// A flush that fails with nobody to tell, one Options.FlushWhenIdle made,
// is told by Stats.FlushError and tried again at each look, until one
// succeeds. The file's descriptor is made a pipe's for a while, whose
// fsync fails with EINVAL as a failing disk's would with EIO.
func TestFlushWhenIdleSaysAFailedFlushAndTriesAgain(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01}, &Options{FlushWhenIdle: 2 * time.Millisecond})
	require.NoError(t, err)
	defer f.Close()
	fd := descriptorOf(t, path)
	saved, err := syscall.Dup(fd)
	require.NoError(t, err)
	defer syscall.Close(saved)
	reader, writer, err := os.Pipe()
	require.NoError(t, err)
	defer reader.Close()
	defer writer.Close()

	f.mu.Lock() // no flush runs while the descriptor changes
	require.NoError(t, syscall.Dup3(int(writer.Fd()), fd, syscall.O_CLOEXEC))
	f.mu.Unlock()
	require.NoError(t, f.Add(key(1), 1))
	require.Eventually(t, func() bool { return f.Stats().FlushError != nil }, 20*time.Second, time.Millisecond)
	assert.ErrorIs(t, f.Stats().FlushError, syscall.EINVAL)
	assert.Zero(t, f.Stats().DiskSeq)

	f.mu.Lock()
	require.NoError(t, syscall.Dup3(saved, fd, syscall.O_CLOEXEC))
	f.mu.Unlock()
	flushedSoon(t, f)
	assert.NoError(t, f.Stats().FlushError, "cleared once a flush succeeds")
}
