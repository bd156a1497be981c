package release

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStore64WritesTheWord(t *testing.T) {
	words := make([]uint64, 3)
	Store64(&words[1], 0xfedc_ba98_7654_3210)
	require.Equal(t, []uint64{0, 0xfedc_ba98_7654_3210, 0}, words, "only the word at addr changes")
	Store64(&words[1], 0)
	require.Equal(t, []uint64{0, 0, 0}, words)
}

func TestAdd64AddsAndSubtracts(t *testing.T) {
	var w uint64
	Add64(&w, 5)
	Add64(&w, 7)
	require.Equal(t, uint64(12), w)
	Add64(&w, ^uint64(0)) // minus one, as a tally is lowered
	require.Equal(t, uint64(11), w)
	Add64(&w, ^uint64(10))
	require.Equal(t, uint64(0), w)
}

// A reader that sees the writer's flag sees every store the writer made
// before it: the order the undo record's seal and a change's counters rely
// on. Each round the writer fills a line of data and then publishes its
// round; a reader that loads a round checks the data of that round.
func TestStoresAreSeenInOrder(t *testing.T) {
	const rounds = 200_000
	var data [8]uint64
	var round uint64
	var wg sync.WaitGroup
	var stale atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seen := uint64(0); seen < rounds; {
			r := atomic.LoadUint64(&round)
			if r == seen {
				continue
			}
			for i := range data {
				if atomic.LoadUint64(&data[i]) < r {
					stale.Add(1)
				}
			}
			seen = r
		}
	}()
	for r := uint64(1); r <= rounds; r++ {
		for i := range data {
			Store64(&data[i], r)
		}
		Store64(&round, r)
	}
	wg.Wait()
	require.Zero(t, stale.Load(), "a reader saw a round before its data")
}

// BenchmarkStore64 sets Store64 beside sync/atomic's store, which it
// replaces on the writer's path: eight stores into one cache line, as a
// change makes into a block.
func BenchmarkStore64(b *testing.B) {
	var block [8]uint64
	for _, bench := range []struct {
		name  string
		store func(*uint64, uint64)
	}{{"release", Store64}, {"sync-atomic", atomic.StoreUint64}} {
		b.Run(bench.name, func(b *testing.B) {
			v := uint64(0)
			for b.Loop() {
				for i := range block {
					bench.store(&block[i], v)
				}
				v++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(block)), "ns/store")
		})
	}
}
