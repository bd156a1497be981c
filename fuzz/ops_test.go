package fuzz

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

// entry is a key added with an id.
type entry struct{ key, id uint64 }

// FuzzOperations reads its input two bytes an operation and checks the
// filter against the exact multiset of entries held: never a false negative,
// ErrNotFound exactly for keys not held (false positives aside), counts
// exact per sub-filter, across flushes and reopens.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 9, 3, 0, 6, 0, 0, 3, 7, 0, 1, 3})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 5, 0, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		path := filepath.Join(memDir(t), "f.tb")
		flt, err := engine.Create(path, engine.Config{Capacity: 4, ErrorRate: 0.001, Growth: 1, Seed: 2}, nil)
		require.NoError(t, err)
		defer func() { flt.Close() }()
		held := map[entry]int{}
		clock := uint64(0)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, uint64(ops[i+1])
			switch op {
			case 0, 1: // add, with the clock or a little older
				clock += arg % 3
				e := entry{key: arg % 32, id: clock - min(clock, uint64(op)*arg%5)}
				err := flt.Add(key(e.key), e.id)
				if refused(err) {
					continue
				}
				require.NoError(t, err)
				held[e]++
			case 2: // remove something held or not
				e := entry{key: arg % 32, id: clock - min(clock, arg%4)}
				err := flt.Remove(key(e.key), e.id)
				switch {
				case held[e] > 0:
					require.NoError(t, err, "remove of a held entry")
					if held[e]--; held[e] == 0 {
						delete(held, e)
					}
				case err == nil:
					// A false positive was decremented: the model no longer
					// describes the filter.
					t.Skip("removed a false positive")
				default:
					require.ErrorIs(t, err, engine.ErrNotFound)
				}
			case 3:
				for e := range held {
					require.True(t, flt.Contains(key(e.key)), "false negative for %+v", e)
				}
			case 4: // test-and-add
				clock++
				present, err := flt.TestAndAdd(key(arg%48), clock)
				if refused(err) {
					continue
				}
				require.NoError(t, err)
				if !present {
					held[entry{key: arg % 48, id: clock}]++
				}
			case 5:
				n, err := flt.DropBefore(clock - min(clock, arg%8))
				require.NoError(t, err)
				if n > 0 {
					oldest := flt.Stats().SubFilters[0].FirstID
					for e := range held {
						if e.id < oldest {
							delete(held, e)
						}
					}
				}
			case 6:
				require.NoError(t, flt.Flush())
			case 7:
				require.NoError(t, flt.Close())
				flt, err = engine.Open(path, nil)
				require.NoError(t, err)
			}
			checkCounts(t, flt, held)
		}
		require.NoError(t, flt.Close())
		require.NoError(t, engine.Verify(path))
	})
}

// refused says whether err is an add the filter turned down whole, as it
// may: an id older than every sub-filter kept, or a new sub-filter wanted
// when the chain holds all it can. Nothing changed; checkCounts sees to it.
func refused(err error) bool {
	return errors.Is(err, engine.ErrIDRetired) || errors.Is(err, engine.ErrChainFull)
}

// checkCounts compares every sub-filter's count with the entries it owns.
func checkCounts(t *testing.T, flt *engine.Filter, held map[entry]int) {
	t.Helper()
	s := flt.Stats()
	per := make([]uint64, len(s.SubFilters))
	for e, n := range held {
		owner := -1
		for i, sub := range s.SubFilters {
			if sub.FirstID <= e.id {
				owner = i
			}
		}
		require.GreaterOrEqual(t, owner, 0, "held entry %+v has no owner", e)
		per[owner] += uint64(n)
	}
	for i, sub := range s.SubFilters {
		require.Equal(t, per[i], sub.Count, "count of sub-filter %d", i)
	}
}
