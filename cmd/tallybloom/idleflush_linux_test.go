package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/failsync"
)

// A flush made while the input waits that fails is warned of while the
// input still waits, not when the next key or the input's end comes. The
// command runs in this process, so that its file's descriptor can be made
// a pipe's for a while, whose fsync fails with EINVAL as a failing disk's
// would with EIO.
func TestAFailedFlushIsWarnedOfWhileTheInputWaits(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	in, feed := io.Pipe()
	errOut := &syncBuffer{}
	code := make(chan int, 1)
	go func() { code <- run([]string{"add", "--flush-when-idle", "20ms", path}, in, io.Discard, errOut) }()
	t.Cleanup(func() { _ = feed.Close() })

	// flushed says whether the file is flushed at seq: its creation is 1,
	// and each key added one more.
	flushed := func(seq uint64) bool {
		s := readerStats(t, path)
		return s.MemSeq == seq && s.DiskSeq == seq
	}
	_, err := io.WriteString(feed, "spam.example\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return flushed(2) }, 20*time.Second, 5*time.Millisecond,
		"the first key flushed while the input waits")

	fd := failsync.Find(t, path)
	fd.Fail()
	_, err = io.WriteString(feed, "ham.example\n")
	require.NoError(t, err)
	warning := "warning: flushing " + path + " while the input waited failed: "
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), warning) }, 20*time.Second, 5*time.Millisecond,
		"warned while the input waits")
	assert.Contains(t, errOut.String(), "invalid argument")

	fd.Restore()
	require.NoError(t, feed.Close())
	require.Equal(t, 0, <-code, errOut.String())
	assert.Equal(t, 1, strings.Count(errOut.String(), warning), "once while it keeps failing: %s", errOut)
	assert.True(t, flushed(3), "flushed at the end, once the disk works again")
}
