package engine

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var modelSteps = flag.Int("model.steps", 6_000, "operations per model-based run")

// model is the exact multiset the filter must agree with: how many times
// each (key, id) pair was added and not removed.
type model struct {
	held map[modelEntry]int
}

type modelEntry struct {
	key uint64
	id  uint64
}

// owner is the first id of the sub-filter that owns id in stats.
func owner(stats Stats, id uint64) (uint64, bool) {
	for i := len(stats.SubFilters) - 1; i >= 0; i-- {
		if stats.SubFilters[i].FirstID <= id {
			return stats.SubFilters[i].FirstID, true
		}
	}
	return 0, false
}

// check compares every count with the model and looks for false negatives.
func (m *model) check(t *testing.T, f *Filter) {
	t.Helper()
	stats := f.Stats()
	perSub := map[uint64]uint64{}
	var total uint64
	for e, n := range m.held {
		first, ok := owner(stats, e.id)
		require.True(t, ok, "a held entry has an owner")
		perSub[first] += uint64(n)
		total += uint64(n)
		require.True(t, f.Contains(key(e.key)), "false negative for key %d id %d", e.key, e.id)
	}
	require.Equal(t, total, stats.Count)
	for _, s := range stats.SubFilters {
		require.Equal(t, perSub[s.FirstID], s.Count, "count of the sub-filter from id %d", s.FirstID)
	}
}

// TestModel runs long random sequences of every operation against the exact
// model: never a false negative, ErrNotFound exactly when the routed
// sub-filter does not hold the key, counts exact, across Flush and reopen.
func TestModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run("", func(t *testing.T) {
			runModel(t, seed, *modelSteps)
		})
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 40, ErrorRate: 0.05, Growth: 1 + float64(seed%2), Seed: seed + 1}, nil)
	require.NoError(t, err)
	defer func() { f.Close() }()
	m := &model{held: map[modelEntry]int{}}
	clock := uint64(1000)
	var entries []modelEntry // held entries, for picking; may hold stale ones
	const keySpace = 300

	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 40: // add, mostly with the newest id, sometimes an older one
			if rng.IntN(4) > 0 {
				clock += uint64(rng.IntN(3))
			}
			id := clock
			if rng.IntN(5) == 0 {
				id = clock - uint64(rng.IntN(200))
			}
			e := modelEntry{key: uint64(rng.IntN(keySpace)), id: id}
			err := f.Add(key(e.key), e.id)
			if _, ok := owner(f.Stats(), e.id); !ok {
				require.ErrorIs(t, err, ErrIDRetired)
				continue
			}
			require.NoError(t, err)
			m.held[e]++
			entries = append(entries, e)
		case op < 60: // remove an added key with its id
			if len(entries) == 0 {
				continue
			}
			i := rng.IntN(len(entries))
			e := entries[i]
			entries[i] = entries[len(entries)-1]
			entries = entries[:len(entries)-1]
			if m.held[e] == 0 {
				continue
			}
			require.NoError(t, f.Remove(key(e.key), e.id), "step %d: remove of a held key", step)
			if m.held[e]--; m.held[e] == 0 {
				delete(m.held, e)
			}
		case op < 72: // remove a key never added
			k := uint64(keySpace + rng.IntN(1_000_000))
			id := clock - uint64(rng.IntN(100))
			if routedHolds(f, key(k), id) {
				continue // a false positive: removing it would be unsafe
			}
			err := f.Remove(key(k), id)
			require.ErrorIs(t, err, ErrNotFound, "step %d", step)
		case op < 85: // contains of a held key
			if len(entries) > 0 {
				e := entries[rng.IntN(len(entries))]
				if m.held[e] > 0 {
					require.True(t, f.Contains(key(e.key)), "step %d: false negative", step)
				}
			}
		case op < 93: // test-and-add
			clock++
			e := modelEntry{key: uint64(rng.IntN(keySpace * 2)), id: clock}
			heldAnywhere := false
			for h := range m.held {
				if h.key == e.key {
					heldAnywhere = true
					break
				}
			}
			present, err := f.TestAndAdd(key(e.key), e.id)
			require.NoError(t, err)
			if heldAnywhere {
				require.True(t, present, "step %d: test-and-add missed a held key", step)
			}
			if !present {
				m.held[e]++
				entries = append(entries, e)
			}
		case op < 95: // retire old sub-filters
			before := f.Stats()
			cut := clock - uint64(rng.IntN(400))
			n, err := f.DropBefore(cut)
			require.NoError(t, err)
			after := f.Stats()
			require.Equal(t, len(before.SubFilters)-n, len(after.SubFilters))
			oldest := after.SubFilters[0].FirstID
			for e := range m.held {
				if e.id < oldest {
					delete(m.held, e)
				}
			}
		case op < 97:
			require.NoError(t, f.Flush())
			assert.Equal(t, f.Stats().MemSeq, f.Stats().DiskSeq)
		default:
			f = reopen(t, f, nil)
		}
		if step%500 == 0 {
			m.check(t, f)
		}
	}
	m.check(t, f)
	f = reopen(t, f, nil)
	m.check(t, f)
	t.Logf("seed %d: %d steps, %d sub-filters, %d held, sequence %d", seed, steps, len(f.Stats().SubFilters), len(m.held), f.Stats().MemSeq)
}
