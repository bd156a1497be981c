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
		start, err := f.OnCommit(func(c *Change) {
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
		_, err = f.OnCommit(nil)
		require.NoError(t, err)
		require.NoError(t, f.Add(key(1<<40), id))
		assert.Equal(t, start+uint64(len(seqs)), seqs[len(seqs)-1], "no calls after OnCommit(nil)")
	}
}

// One feed at a time: a second function is refused while the first keeps
// its calls, until OnCommit(nil) frees the feed.
func TestChangeFeedHasOneOwner(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 10, ErrorRate: 0.1})
	var first, second int
	_, err := f.OnCommit(func(*Change) { first++ })
	require.NoError(t, err)
	_, err = f.OnCommit(func(*Change) { second++ })
	require.ErrorIs(t, err, ErrFeedInUse)
	require.NoError(t, f.Add(key(1), 1))
	assert.Equal(t, [2]int{1, 0}, [2]int{first, second}, "the first keeps the feed")

	_, err = f.OnCommit(nil)
	require.NoError(t, err)
	_, err = f.OnCommit(func(*Change) { second++ })
	require.NoError(t, err, "a freed feed takes a new function")
	require.NoError(t, f.Add(key(2), 2))
	assert.Equal(t, [2]int{1, 1}, [2]int{first, second})
}

func TestChangeFeedIsForWriters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 10, ErrorRate: 0.1})
	r, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	_, err = r.OnCommit(func(*Change) {})
	assert.ErrorIs(t, err, ErrReadOnly)
}
