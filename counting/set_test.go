package counting

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setOf builds filters of the geometries, each with its own salt and with
// presence bits if presence is set, and adds keys [i*1000, i*1000+fill[i])
// to filter i.
func setOf(t *testing.T, geometries []Geometry, fill []int, presence bool) ([]*Filter, Set) {
	t.Helper()
	filters := make([]*Filter, len(geometries))
	for i, g := range geometries {
		var bits []byte
		if presence {
			bits = make([]byte, PresenceBytes(g))
		}
		f, err := New(make([]byte, g.Bytes()), bits, g, uint64(i)*7919+1)
		require.NoError(t, err)
		for j := range fill[i] {
			p := probe(f, NewHasher(5).Key(key(i*1000+j)))
			f.Increment(&p)
		}
		filters[i] = f
	}
	return filters, NewSet(filters)
}

// Candidates may keep a filter that does not hold a key, never drop one that
// does; and it must drop most filters that do not, or it saves nothing.
func TestCandidatesNeverDropAFilterThatHoldsTheKey(t *testing.T) {
	geometries := []Geometry{
		{Blocks: 64, K: 2}, // fewer counters than Candidates tests: always kept
		{Blocks: 64, K: 4}, // exactly as many
		{Blocks: 40, K: 7}, // 1%
		{Blocks: 300, K: 14},
		{Blocks: 3, K: 5, Flat: true}, // flat: always kept
		{Blocks: 64, K: 32},
	}
	fill := []int{300, 700, 400, 1000, 30, 150}
	for _, presence := range []bool{true, false} {
		t.Run(fmt.Sprintf("presence=%v", presence), func(t *testing.T) {
			candidatesKeepEveryHolder(t, geometries, fill, presence)
		})
	}
}

func candidatesKeepEveryHolder(t *testing.T, geometries []Geometry, fill []int, presence bool) {
	filters, set := setOf(t, geometries, fill, presence)
	kept, absent := make([]int, len(filters)), make([]int, len(filters))
	for k := range 8000 {
		h := NewHasher(5).Key(key(k))
		maybe := set.Candidates(h)
		assert.Zero(t, maybe>>len(filters), "bits past the set's filters")
		for i, f := range filters {
			in := maybe>>i&1 == 1
			if f.Contains(h) {
				require.True(t, in, "key %d is in filter %d, which Candidates dropped", k, i)
				continue
			}
			absent[i]++
			if in {
				kept[i]++
			}
		}
	}
	for i, g := range geometries {
		require.NotZero(t, absent[i])
		if g.Flat || g.K < quickCounters {
			assert.Equal(t, absent[i], kept[i], "filter %d is never ruled out", i)
			continue
		}
		assert.Less(t, float64(kept[i])/float64(absent[i]), 0.5,
			"filter %d: Candidates kept %d of %d keys it does not hold", i, kept[i], absent[i])
	}
}

// A Set of the most filters it holds puts filter i at bit i, the last at bit 63.
func TestCandidatesOfAFullSet(t *testing.T) {
	geometries := make([]Geometry, MaxSetFilters)
	fill := make([]int, MaxSetFilters)
	for i := range geometries {
		geometries[i] = Geometry{Blocks: 4, K: 6}
	}
	fill[0], fill[MaxSetFilters-1] = 1, 1
	filters, set := setOf(t, geometries, fill, true)
	for _, i := range []int{0, MaxSetFilters - 1} {
		h := NewHasher(5).Key(key(i * 1000))
		require.True(t, filters[i].Contains(h))
		maybe := set.Candidates(h)
		assert.Equal(t, uint64(1), maybe>>i&1, "filter %d", i)
		for j, f := range filters {
			if maybe>>j&1 == 0 {
				assert.False(t, f.Contains(h))
			}
		}
		// The other filters are empty: every one of them is ruled out.
		assert.Equal(t, uint64(1)<<i, maybe, "filter %d", i)
	}
	assert.Panics(t, func() { NewSet(make([]*Filter, MaxSetFilters+1)) })
}

// Presence bits answer for the counters: a Set over them rules out exactly
// the filters a Set over the counters does.
func TestCandidatesFromPresenceBitsMatchCounters(t *testing.T) {
	geometries := []Geometry{{Blocks: 40, K: 7}, {Blocks: 300, K: 14}, {Blocks: 64, K: 4}}
	fill := []int{400, 1000, 700}
	_, counters := setOf(t, geometries, fill, false)
	_, presence := setOf(t, geometries, fill, true)
	ruledOut := 0
	for k := range 8000 {
		h := NewHasher(5).Key(key(k))
		want := counters.Candidates(h)
		require.Equal(t, want, presence.Candidates(h), "key %d", k)
		ruledOut += len(geometries) - bits.OnesCount64(want)
	}
	require.Positive(t, ruledOut, "no filter was ruled out: the comparison proves nothing")
}
