package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Replaying the change feed on a copy of the counters keeps the copy equal
// to the file, through growth, retirement, removes and flat sub-filters.
func TestChangeFeedReplaysExactly(t *testing.T) {
	for _, cfg := range []Config{
		{Capacity: 300, ErrorRate: 0.01, Growth: 1, Seed: 3},
		{Capacity: 20, ErrorRate: 0.5, Growth: 1, Seed: 3}, // flat sub-filters
	} {
		f := newTestFilter(t, cfg)
		for i := range uint64(100) {
			require.NoError(t, f.Add(key(i), i))
		}
		// The copy starts as the file is when the feed starts.
		copies := map[int][]byte{}
		for _, sub := range f.chain.SubFilters() {
			copies[sub.Level] = append([]byte(nil), spaceOf(sub).counters...)
		}
		tallies := map[int]Tallies{}
		var seqs []uint64
		start, stop, err := f.OnCommit(func(c *Change) {
			seqs = append(seqs, c.Seq)
			if c.Directory != nil {
				kept := map[int][]byte{}
				for _, s := range c.Directory {
					if old, ok := copies[s.Level]; ok && uint64(len(old)) == s.Bytes {
						kept[s.Level] = old
					} else {
						kept[s.Level] = make([]byte, s.Bytes)
					}
				}
				copies = kept
			}
			for _, w := range c.Counters {
				copy(copies[w.Level][w.Offset:], w.Bytes)
			}
			if c.Tallies != nil {
				tallies[c.Tallies.Level] = *c.Tallies
			}
		})
		require.NoError(t, err)
		assert.Equal(t, f.Stats().MemSeq, start)

		rng := rand.New(rand.NewPCG(1, 1))
		id := uint64(100)
		for range 3000 {
			switch rng.IntN(10) {
			case 0:
				_, err := f.DropBefore(f.Stats().SubFilters[len(f.Stats().SubFilters)-1].FirstID)
				require.NoError(t, err)
			case 1, 2:
				k := id - uint64(rng.IntN(50))
				_ = f.Remove(key(k), k) // held or not
			default:
				id++
				require.NoError(t, f.Add(key(id), id))
			}
		}
		for i, s := range seqs {
			require.Equal(t, start+uint64(i)+1, s, "one sequence apart, in order")
		}
		require.Len(t, copies, len(f.chain.SubFilters()))
		for _, sub := range f.chain.SubFilters() {
			require.Equal(t, spaceOf(sub).counters, copies[sub.Level], "level %d byte for byte", sub.Level)
			if got, ok := tallies[sub.Level]; ok {
				assert.Equal(t, Tallies{Level: sub.Level, Count: sub.Count(), MaxID: sub.MaxID(), NonZero: sub.NonZero()}, got)
			}
		}
		stop()
		require.NoError(t, f.Add(key(1<<40), id))
		assert.Equal(t, start+uint64(len(seqs)), seqs[len(seqs)-1], "no calls after stop")
	}
}

// Several functions follow one filter, each with every change in order,
// the same function given twice as two; stopping one leaves the others.
func TestChangeFeedHasManySubscribers(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 10, ErrorRate: 0.1})
	var first, second []uint64
	record := func(seqs *[]uint64) func(*Change) {
		return func(c *Change) { *seqs = append(*seqs, c.Seq) }
	}
	_, stopFirst, err := f.OnCommit(record(&first))
	require.NoError(t, err)
	require.NoError(t, f.Add(key(1), 1))
	start, stopSecond, err := f.OnCommit(record(&second))
	require.NoError(t, err)
	twice := 0
	count := func(*Change) { twice++ }
	_, stopCount, err := f.OnCommit(count)
	require.NoError(t, err)
	_, stopCountAgain, err := f.OnCommit(count)
	require.NoError(t, err)

	require.NoError(t, f.Add(key(2), 2))
	require.NoError(t, f.Add(key(3), 3))
	assert.Equal(t, []uint64{start, start + 1, start + 2}, first, "the first has every change since it began")
	assert.Equal(t, []uint64{start + 1, start + 2}, second, "the second every change since it began")
	assert.Equal(t, 4, twice, "one function given twice is called twice a change")

	stopFirst()
	stopFirst() // again: nothing more to stop
	stopCount()
	require.NoError(t, f.Add(key(4), 4))
	assert.Len(t, first, 3, "no calls after stop")
	assert.Equal(t, []uint64{start + 1, start + 2, start + 3}, second, "the others keep theirs")
	assert.Equal(t, 5, twice, "stopping one of the two leaves the other")

	stopSecond()
	stopCountAgain()
	require.NoError(t, f.Add(key(5), 5))
	assert.Len(t, second, 3)
	assert.Equal(t, 5, twice)

	_, _, err = f.OnCommit(nil)
	assert.ErrorIs(t, err, ErrInvalidInput)
}

func TestChangeFeedIsForWriters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 10, ErrorRate: 0.1})
	r, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	_, _, err = r.OnCommit(func(*Change) {})
	assert.ErrorIs(t, err, ErrReadOnly)
}
