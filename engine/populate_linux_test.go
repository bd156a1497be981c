package engine

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openSecondSubFilter fills f's first sub-filter, built for capacity
// keys, and opens the second with one add.
func openSecondSubFilter(t *testing.T, f *Filter, capacity uint64) *space {
	t.Helper()
	for i := range capacity {
		require.NoError(t, f.Add(key(i), 1))
	}
	require.Len(t, f.Stats().SubFilters, 1)
	require.NoError(t, f.Add(key(capacity), 2))
	subs := f.chain.SubFilters()
	require.Len(t, subs, 2)
	return spaceOf(subs[1])
}

// With Options.PopulateNewSubFilters a sub-filter the chain opens is
// brought into memory whole, in the background, once the add that opened
// it has committed; without it, only the pages adds store into come in.
// The first sub-filter, which Create made, is left as it was.
func TestNewSubFiltersArePopulatedWhenAsked(t *testing.T) {
	const capacity = 20_000
	cfg := Config{Capacity: capacity, ErrorRate: 0.01, Growth: 16, Seed: 71}
	pages := func(sp *space) int { return (len(sp.region.Bytes()) + os.Getpagesize() - 1) / os.Getpagesize() }

	plain := newTestFilter(t, cfg)
	second := openSecondSubFilter(t, plain, capacity)
	plain.populating.Wait()
	if n := residentPages(t, second.region.Bytes()); 2*n > pages(second) {
		t.Skipf("the page cache holds %d of %d pages of a sub-filter one add stored into: this file system keeps new files' pages in memory, and the test cannot see what it checks", n, pages(second))
	}
	assert.Less(t, residentPages(t, second.region.Bytes()), 10, "without the option, the pages one add stores into")

	asked, err := Create(tempPath(t), cfg, &Options{PopulateNewSubFilters: true})
	require.NoError(t, err)
	defer asked.Close()
	asked.populating.Wait()
	first := spaceOf(asked.chain.SubFilters()[0])
	// Larger than the filters an invariants build checks whole after every
	// change (128 KiB), so that its pages come in only as adds touch them.
	require.Greater(t, asked.chain.SubFilters()[0].Geometry.Bytes(), uint64(128<<10))
	assert.Less(t, residentPages(t, first.region.Bytes()), pages(first), "the first sub-filter, which Create made, is not populated")
	second = openSecondSubFilter(t, asked, capacity)
	asked.populating.Wait()
	assert.Equal(t, pages(second), residentPages(t, second.region.Bytes()), "the new sub-filter is in memory whole")
	require.Greater(t, pages(second), 200, "a sub-filter of many pages")

	// Open takes the option too.
	path := asked.path
	require.NoError(t, asked.Close())
	reopened, err := Open(path, &Options{PopulateNewSubFilters: true, ReadOnly: true})
	require.NoError(t, err)
	assert.False(t, reopened.populateNew, "a reader ignores it")
	require.NoError(t, reopened.Close())
	reopened, err = Open(path, &Options{PopulateNewSubFilters: true})
	require.NoError(t, err)
	defer reopened.Close()
	assert.True(t, reopened.populateNew)
}

// A sub-filter retired while a populate runs gives its room back only
// after the populate ends, which would otherwise bring pages of the
// released room back in, and have them written back.
func TestRetiringWaitsForAPopulate(t *testing.T) {
	f, err := Create(tempPath(t), Config{Capacity: 100, ErrorRate: 0.01, Growth: 1, Seed: 72}, &Options{PopulateNewSubFilters: true})
	require.NoError(t, err)
	defer f.Close()
	for i := range uint64(250) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.Len(t, f.Stats().SubFilters, 3)
	f.populating.Wait()

	f.populating.Add(1) // a populate still running
	done := make(chan error, 1)
	go func() {
		_, err := f.DropBefore(200)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("room given back during a populate (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	f.populating.Done()
	require.NoError(t, <-done)
	assert.Len(t, f.Stats().SubFilters, 1)
}

// Close waits for a populate in progress, and a populate a Close
// overtakes does nothing: the file opens again whole.
func TestCloseWhileAPopulateRuns(t *testing.T) {
	const capacity = 2_000
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: capacity, ErrorRate: 0.01, Growth: 512, Seed: 73}, &Options{PopulateNewSubFilters: true})
	require.NoError(t, err)
	openSecondSubFilter(t, f, capacity)
	require.NoError(t, f.Close())
	f.populating.Wait()
	require.NoError(t, Verify(path))
	g, err := Open(path, nil)
	require.NoError(t, err)
	defer g.Close()
	assert.True(t, g.Contains(key(capacity)))
}
