package engine

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/failsync"
)

// A flush that fails with nobody to tell, one Options.FlushWhenIdle made,
// is told by Stats.FlushError and tried again at each look, until one
// succeeds. The file's descriptor is made a pipe's for a while, whose
// fsync fails with EINVAL as a failing disk's would with EIO.
func TestFlushWhenIdleSaysAFailedFlushAndTriesAgain(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01}, &Options{FlushWhenIdle: 2 * time.Millisecond})
	require.NoError(t, err)
	defer f.Close()
	fd := failsync.Find(t, path)
	f.mu.Lock() // no flush runs while the descriptor changes
	fd.Fail()
	f.mu.Unlock()
	require.NoError(t, f.Add(key(1), 1))
	require.Eventually(t, func() bool { return f.Stats().FlushError != nil }, 20*time.Second, time.Millisecond)
	assert.ErrorIs(t, f.Stats().FlushError, syscall.EINVAL)
	assert.Zero(t, f.Stats().DiskSeq)

	f.mu.Lock()
	fd.Restore()
	f.mu.Unlock()
	flushedSoon(t, f)
	assert.NoError(t, f.Stats().FlushError, "cleared once a flush succeeds")
}
