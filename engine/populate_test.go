package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/faults"
)

// addsFault adds keys [from, to) with ids from id on and counts the page
// faults the adds take. The keys are made first: the heap they take
// faults too.
func addsFault(t *testing.T, f *Filter, from, to, id uint64) int64 {
	t.Helper()
	keys := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		keys = append(keys, key(i))
	}
	c := faults.Start()
	for i, k := range keys {
		require.NoError(t, f.Add(k, id+from+uint64(i)))
	}
	n, ok := c.Since()
	if !ok {
		t.Skip("page faults are not counted here (this system, or the race detector)")
	}
	return n
}

// Adds into a new filter fault their pages in one at a time; after
// Populate they take next to none, and the filter is as it was: same
// sequence, flushed, every key held.
func TestPopulateReadiesTheNewestSubFilter(t *testing.T) {
	cfg := Config{Capacity: 400_000, ErrorRate: 0.01, Growth: 1, Seed: 3}
	const keys = 100_000
	fresh := newTestFilter(t, cfg)
	pages := int64(fresh.Stats().SubFilters[0].Bytes / PageSize)
	cold := addsFault(t, fresh, 0, keys, 1)
	if cold < pages/2 {
		t.Skipf("%d adds into a new filter of %d pages took %d faults: nothing for Populate to take away here", keys, pages, cold)
	}

	f := newTestFilter(t, cfg)
	before := f.Stats()
	require.NoError(t, f.Populate())
	after := f.Stats()
	assert.Equal(t, before.MemSeq, after.MemSeq, "Populate is no change")
	assert.Equal(t, before.DiskSeq, after.DiskSeq, "a flushed filter stays flushed")
	populated := addsFault(t, f, 0, keys, 1)
	t.Logf("%d adds into a new filter of %d pages took %d faults, %d after Populate", keys, pages, cold, populated)
	assert.Less(t, populated, pages/10, "adds after Populate fault (%d without)", cold)
	for i := range uint64(keys) {
		require.True(t, f.Contains(key(i)))
	}
	require.NoError(t, f.Flush())
	require.NoError(t, Verify(f.Path()))

	// The chain opens a second sub-filter: Populate readies that one.
	addsFault(t, f, keys, cfg.Capacity+1, 1)
	require.Len(t, f.Stats().SubFilters, 2)
	require.NoError(t, f.Populate())
	newest := f.Stats().SubFilters[1]
	assert.Less(t, addsFault(t, f, cfg.Capacity+1, cfg.Capacity+1+keys, newest.FirstID), pages/10,
		"adds into the newest sub-filter after Populate fault")
}

func TestPopulateRefusesReadersAndClosedFilters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1000, ErrorRate: 0.01})
	reader, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer reader.Close()
	assert.ErrorIs(t, reader.Populate(), ErrReadOnly)
	require.NoError(t, f.Close())
	assert.ErrorIs(t, f.Populate(), ErrClosed)
}
