//go:build unix

package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On Unix Close replaces the file's pages by zeros in place, so lookups
// may overlap it; elsewhere they must end before it (see Close).

// TestLookupsDuringClose: Close may run while other goroutines look keys
// up, in a writer and in a reader. A lookup that overlaps Close may miss;
// none faults on the unmapped file, the lookups after Close report false,
// Stats reports the filter's state throughout, and Close loses nothing.
// Each round starts the lookups, lets them run, then closes: without the
// file's pages replaced by zeros at Close, a lookup that passed the closed
// check first reads unmapped memory, which kills the test binary.
func TestLookupsDuringClose(t *testing.T) {
	const keys, rounds, lookers = 2_000, 20, 4
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: keys, ErrorRate: 0.01, Seed: 29, Growth: 1}, nil)
	require.NoError(t, err)
	for i := range uint64(2 * keys) { // two sub-filters
		require.NoError(t, f.Add(key(i), i))
	}
	seq := f.Stats().MemSeq
	require.NoError(t, f.Close())
	batch := [][]byte{key(1), key(keys + 1)}
	for round := range rounds {
		opts := &Options{ReadOnly: round%2 == 1}
		f, err := Open(path, opts)
		require.NoError(t, err)
		require.True(t, f.Contains(key(7)))
		var (
			wg      sync.WaitGroup
			started sync.WaitGroup
			after   atomic.Int64 // lookups that began after Close returned and found a key
			wrong   atomic.Int64 // Stats that did not report the file's sequence
		)
		closed := make(chan struct{})
		for range lookers {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				var out []bool
				first := true
				for i := uint64(0); ; i++ {
					select {
					case <-closed:
						if f.Contains(key(i%keys)) || f.ContainsString(string(key(i%keys))) {
							after.Add(1)
						}
						return
					default:
					}
					f.Contains(key(i % (2 * keys)))
					f.ContainsString(string(key(i % keys)))
					out = f.ContainsBatch(batch, out)
					if f.Stats().MemSeq != seq {
						wrong.Add(1)
					}
					if first {
						started.Done()
						first = false
					}
				}
			}()
		}
		started.Wait()
		time.Sleep(time.Millisecond)
		require.NoError(t, f.Close())
		close(closed)
		wg.Wait()
		assert.Zero(t, after.Load(), "round %d: lookups after Close found keys", round)
		assert.Zero(t, wrong.Load(), "round %d: Stats read the closed file", round)
	}
	f, err = Open(path, nil)
	require.NoError(t, err)
	defer f.Close()
	for i := range uint64(2 * keys) {
		require.True(t, f.Contains(key(i)), "key %d lost", i)
	}
}
