//go:build unix

package engine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullDiskLimit is the largest file the full-disk child may write: room for
// the header and a few sub-filters, not for the chain it tries to grow.
const fullDiskLimit = 1 << 20

// fullDiskReport is what the full-disk child tells its parent.
type fullDiskReport struct {
	Added        uint64 // keys 0..Added-1 were added
	Err          string // the error of the add that needed room
	PathErr      bool   // it is an *fs.PathError from the operating system
	SubFilters   int    // before and after the failure: unchanged
	After        int
	AddAfter     string // an add that needs no room, after the failure
	MissingAfter int    // added keys not found after the failure
}

// fillDisk runs with RLIMIT_FSIZE set, so growing the file fails as on a full
// disk (EFBIG where a disk would say ENOSPC), and adds keys until an add
// fails.
func fillDisk(path string) int {
	signal.Ignore(syscall.SIGXFSZ) // report EFBIG instead of dying
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fullDiskLimit, Max: fullDiskLimit}); err != nil {
		fmt.Println(err)
		return 1
	}
	f, err := Create(path, Config{Capacity: 2_000, ErrorRate: 0.01, Growth: 1, Seed: 4}, nil)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var r fullDiskReport
	for ; ; r.Added++ {
		r.SubFilters = len(f.Stats().SubFilters)
		if err := f.Add(key(r.Added), r.Added); err != nil {
			var pathErr *fs.PathError
			r.Err, r.PathErr = err.Error(), errors.As(err, &pathErr)
			break
		}
	}
	r.After = len(f.Stats().SubFilters)
	// The newest sub-filter owns this id, holds it already: no room needed.
	if err := f.Add(key(1<<40), r.Added-1); err != nil {
		r.AddAfter = err.Error()
	}
	for i := range r.Added {
		if !f.Contains(key(i)) {
			r.MissingAfter++
		}
	}
	if err := f.Close(); err != nil {
		fmt.Println(err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	_ = json.NewEncoder(out).Encode(r)
	out.Flush()
	return 0
}

// When growing the file fails, the add that needed the room returns the
// error, nothing else changes, and the filter stays usable and whole.
func TestFullDisk(t *testing.T) {
	path := tempPath(t)
	c := startChild(t, "full-disk", path)
	line, ok := <-c.replies
	require.True(t, ok, "the child died")
	for range c.replies {
	}
	require.NoError(t, c.cmd.Wait())
	var r fullDiskReport
	require.NoError(t, json.Unmarshal([]byte(line), &r), line)
	t.Logf("%+v", r)

	assert.True(t, r.PathErr, "the error keeps its path: %s", r.Err)
	assert.Contains(t, r.Err, path)
	assert.Contains(t, r.Err, "room for a sub-filter")
	assert.Equal(t, r.SubFilters, r.After, "a failed growth adds no sub-filter")
	assert.Greater(t, r.SubFilters, 1)
	assert.Empty(t, r.AddAfter, "adds that need no room still work")
	assert.Zero(t, r.MissingAfter)

	f, err := Open(path, nil)
	require.NoError(t, err)
	defer f.Close()
	for i := range r.Added {
		require.True(t, f.Contains(key(i)), "key %d", i)
	}
	assert.Equal(t, r.Added+1, f.Stats().Count)
	assert.Empty(t, f.verify())
	require.NoError(t, f.Add(key(r.Added), r.Added), "with room again, the chain grows")
	assert.Equal(t, r.SubFilters+1, len(f.Stats().SubFilters))
}
