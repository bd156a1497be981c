package engine

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
)

// scrambledLengthKeys is distinct keys of every length from 0 to 200, in an
// order that is not by length, so that lengths of one class (equal modulo
// lengthClasses: 0, 64, 128, 192) are far apart.
func scrambledLengthKeys() [][]byte {
	keys := make([][]byte, 201)
	for n := range keys {
		k := make([]byte, n)
		for j := range k {
			k[j] = byte(n*7 + j)
		}
		keys[n] = k
	}
	// Interleave long and short.
	var scrambled [][]byte
	for i := range 101 {
		scrambled = append(scrambled, keys[200-i])
		if i < 100 {
			scrambled = append(scrambled, keys[i])
		}
	}
	return scrambled
}

// The batch calls hash a group's keys in order of length, but every hash
// stays with its key.
func TestHashGroupKeepsEachHashWithItsKey(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1000, ErrorRate: 0.01, Seed: 7})
	keys := scrambledLengthKeys()
	for _, group := range [][][]byte{
		keys[:batchGroup], // lengths out of order
		keys[batchGroup : 2*batchGroup],
		keys[len(keys)-5:],      // a short group
		keysFrom(0, batchGroup), // one length, hashed in the order given
		{},
	} {
		var hashes [batchGroup]counting.Hash
		got := f.hashGroup(group, &hashes)
		require.Len(t, got, len(group))
		for i, k := range group {
			assert.Equal(t, f.hasher.Key(k), got[i], "key of %d bytes at %d", len(k), i)
		}
	}
}

func TestByLengthSortsStably(t *testing.T) {
	classes := []uint8{5, 0, 63, 5, 1, 0, 63, 5, 2}
	order := byLength(classes)
	got := order[:len(classes)]
	assert.Equal(t, []uint8{1, 5, 4, 8, 0, 3, 7, 2, 6}, got)

	// Every index once, whatever the classes.
	var many [batchGroup]uint8
	for i := range many {
		many[i] = uint8((i * 37) % lengthClasses)
	}
	order = byLength(many[:])
	sorted := slices.Clone(order[:])
	slices.Sort(sorted)
	for i, v := range sorted {
		require.Equal(t, uint8(i), v)
	}
	for i := 1; i < len(order); i++ {
		require.LessOrEqual(t, many[order[i-1]], many[order[i]])
	}
}

// Batches of keys of mixed lengths give the answers single calls give, and
// leave the counters single calls leave.
func TestBatchesOfMixedLengthsMatchSingleCalls(t *testing.T) {
	cfg := Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3}
	batched, single := newTestFilter(t, cfg), newTestFilter(t, cfg)
	keys := scrambledLengthKeys()
	ids := make([]uint64, len(keys))
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	added := keys[:150]
	require.NoError(t, batched.AddBatch(added, ids[:150]))
	for i, k := range added {
		require.NoError(t, single.Add(k, ids[i]))
	}
	want := make([]bool, len(keys))
	for i, k := range keys {
		want[i] = single.Contains(k)
	}
	assert.Equal(t, want, batched.ContainsBatch(keys, nil))
	for i := range added {
		assert.True(t, want[i], "added key %d", i)
	}

	counters := func(f *Filter) []uint8 {
		var out []uint8
		for _, s := range f.chain.SubFilters() {
			for i := range s.Geometry.Counters() {
				out = append(out, s.Filter().Counter(i))
			}
		}
		return out
	}
	assert.Equal(t, counters(single), counters(batched), "the batch raised other counters than single adds")
}
