package scaling

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
)

type memSpace struct{ counters, presence, tallies []byte }

func (s *memSpace) Counters() []byte { return s.counters }
func (s *memSpace) Presence() []byte { return s.presence }
func (s *memSpace) Tallies() []byte  { return s.tallies }

// memStorage keeps sub-filters in memory and records what the chain told it.
type memStorage struct {
	published [][]*SubFilter
	touches   int
	failNext  error
}

func (m *memStorage) Allocate(level int, g counting.Geometry) (Space, error) {
	if err := m.failNext; err != nil {
		m.failNext = nil
		return nil, err
	}
	return &memSpace{counters: make([]byte, g.Bytes()), presence: make([]byte, counting.PresenceBytes(g)), tallies: make([]byte, MetaSize)}, nil
}
func (m *memStorage) Publish(subs []*SubFilter) {
	m.published = append(m.published, append([]*SubFilter(nil), subs...))
}
func (m *memStorage) Touch(*SubFilter, *counting.Probe) { m.touches++ }

var hasher = counting.NewHasher(1)

func hashOf(i int) counting.Hash { return hasher.Key(binary.LittleEndian.AppendUint64(nil, uint64(i))) }

func newChain(t *testing.T, p Params) (*Chain, *memStorage) {
	t.Helper()
	st := &memStorage{}
	c, err := New(p, st)
	require.NoError(t, err)
	return c, st
}

var small = Params{Capacity: 100, ErrorRate: 0.01, Tightening: 0.9, Growth: 2}

func firstIDs(c *Chain) []uint64 {
	var ids []uint64
	for _, s := range c.SubFilters() {
		ids = append(ids, s.FirstID)
	}
	return ids
}

func TestNewChainStartsAtLevelZeroOwningEveryID(t *testing.T) {
	c, st := newChain(t, small)
	subs := c.SubFilters()
	require.Len(t, subs, 1)
	assert.Equal(t, 0, subs[0].Level)
	assert.Equal(t, uint64(0), subs[0].FirstID)
	assert.Equal(t, uint64(100), subs[0].Capacity)
	assert.Len(t, st.published, 1)
}

func TestNewSubFilterOpensOnlyForANewerID(t *testing.T) {
	c, _ := newChain(t, small)
	for i := range 100 {
		require.NoError(t, c.Add(hashOf(i), 10))
	}
	assert.False(t, c.SubFilters()[0].Overfilled(), "holding its capacity, a sub-filter is full, not overfilled")
	// Full, but id 10 is not newer than every id the newest holds: overfill.
	require.NoError(t, c.Add(hashOf(100), 10))
	assert.Equal(t, []uint64{0}, firstIDs(c))
	assert.True(t, c.SubFilters()[0].Overfilled())

	require.NoError(t, c.Add(hashOf(101), 11))
	assert.Equal(t, []uint64{0, 11}, firstIDs(c))
	newest := c.SubFilters()[1]
	assert.Equal(t, 1, newest.Level)
	assert.Equal(t, uint64(200), newest.Capacity, "growth 2")
	assert.Equal(t, uint64(1), newest.Count())

	// An add with an older id goes to the sub-filter that owns it.
	require.NoError(t, c.Add(hashOf(102), 5))
	assert.Equal(t, uint64(102), c.SubFilters()[0].Count())
	require.NoError(t, c.Remove(hashOf(102), 5))
	assert.ErrorIs(t, c.Remove(hashOf(101), 5), ErrNotFound, "a remove is routed by its id")
	require.NoError(t, c.Remove(hashOf(101), 11))
}

func TestRemove(t *testing.T) {
	c, st := newChain(t, small)
	require.NoError(t, c.Add(hashOf(1), 1))
	touches := st.touches
	assert.ErrorIs(t, c.Remove(hashOf(2), 1), ErrNotFound)
	assert.Equal(t, touches, st.touches, "a refused remove writes nothing")
	require.NoError(t, c.Remove(hashOf(1), 1))
	assert.Equal(t, touches+1, st.touches)
	assert.Equal(t, uint64(0), c.SubFilters()[0].Count())
	assert.Equal(t, uint64(0), c.SubFilters()[0].NonZero())
	assert.ErrorIs(t, c.Remove(hashOf(1), 1), ErrNotFound)
}

func TestRemoveFromAnEmptySubFilterIsRefusedEvenOnSaturatedCounters(t *testing.T) {
	c, _ := newChain(t, Params{Capacity: 1, ErrorRate: 0.5, Tightening: 0.5, Growth: 1})
	sub := c.SubFilters()[0]
	// Saturate every counter, then take the count back to zero.
	for range 20 {
		require.NoError(t, c.Add(hashOf(1), 0))
	}
	for range 20 {
		require.NoError(t, c.Remove(hashOf(1), 0))
	}
	require.Equal(t, uint64(0), sub.Count())
	assert.True(t, sub.filter.Contains(hashOf(1)), "saturated counters stay")
	assert.ErrorIs(t, c.Remove(hashOf(1), 0), ErrNotFound, "counts never go below zero")
}

func TestDropBeforeRetiresWholeRangesAndReusesLevels(t *testing.T) {
	c, _ := newChain(t, Params{Capacity: 10, ErrorRate: 0.01, Tightening: 0.9, Growth: 1})
	id := uint64(0)
	for range 4 {
		for range 10 {
			id++
			require.NoError(t, c.Add(hashOf(int(id)), id))
		}
	}
	ids := firstIDs(c)
	require.Equal(t, []uint64{0, 11, 21, 31}, ids)

	assert.Empty(t, c.DropBefore(10), "sub-filter 0 owns ids up to 10")
	dropped := c.DropBefore(21)
	require.Len(t, dropped, 2)
	assert.Equal(t, []uint64{21, 31}, firstIDs(c))
	assert.Empty(t, c.DropBefore(1 << 60)[1:], "the newest is never retired")
	assert.Equal(t, []uint64{31}, firstIDs(c))

	_, err := route(c.SubFilters(), 30)
	assert.ErrorIs(t, err, ErrIDRetired)
	assert.ErrorIs(t, c.Add(hashOf(1), 30), ErrIDRetired)

	// The freed levels are reused, lowest first.
	for range 10 {
		id++
		require.NoError(t, c.Add(hashOf(int(id)), id))
	}
	subs := c.SubFilters()
	assert.Equal(t, 0, subs[len(subs)-1].Level)
	assert.Equal(t, uint64(10), subs[len(subs)-1].Count(), "a reused level starts from zero tallies")
}

func TestChainFull(t *testing.T) {
	c, _ := newChain(t, Params{Capacity: 1, ErrorRate: 0.5, Tightening: 0.99, Growth: 1})
	for id := range uint64(MaxSubFilters) {
		require.NoError(t, c.Add(hashOf(int(id)), id))
	}
	assert.Len(t, c.SubFilters(), MaxSubFilters)
	assert.ErrorIs(t, c.Add(hashOf(1000), 1000), ErrChainFull)
	assert.Len(t, c.SubFilters(), MaxSubFilters, "a refused add changes nothing")
	_, err := Restore(c.params, &memStorage{}, c.SubFilters())
	assert.NoError(t, err, "a full chain's directory is a valid one")
}

func TestAllocationFailureChangesNothing(t *testing.T) {
	c, st := newChain(t, Params{Capacity: 1, ErrorRate: 0.1, Tightening: 0.9, Growth: 1})
	require.NoError(t, c.Add(hashOf(1), 1))
	injected := errors.New("disk full")
	st.failNext = injected
	assert.ErrorIs(t, c.Add(hashOf(2), 2), injected)
	assert.Len(t, c.SubFilters(), 1)
	assert.Equal(t, uint64(1), c.SubFilters()[0].Count())
	require.NoError(t, c.Add(hashOf(2), 2), "the next add succeeds")
	assert.Len(t, c.SubFilters(), 2)
}

func TestCompoundBoundHoldsForAnyNumberOfLevels(t *testing.T) {
	for _, r := range []float64{0.1, 0.5, 0.9, 0.99} {
		p := Params{Capacity: 1, ErrorRate: 0.01, Tightening: r, Growth: 2}
		sum := 0.0
		for level := range MaxSubFilters {
			sum += p.LevelErrorRate(level)
		}
		// The geometric sum is below ErrorRate; allow float rounding only.
		assert.LessOrEqual(t, sum, p.ErrorRate*(1+1e-12), "r=%v", r)
	}
}

func TestParamsValidateReportsEveryProblem(t *testing.T) {
	err := Params{ErrorRate: 1, Tightening: 0, Growth: 0.5}.Validate()
	require.ErrorIs(t, err, ErrInvalidParams)
	for _, word := range []string{"capacity", "error rate", "tightening", "growth"} {
		assert.Contains(t, err.Error(), word)
	}
	assert.NoError(t, small.Validate())

	// Each bound is open where the rate would mean nothing, closed where
	// equal sub-filters are asked for.
	for _, bad := range []Params{
		{Capacity: 1, ErrorRate: 0, Tightening: 0.9, Growth: 2},
		{Capacity: 1, ErrorRate: 0.01, Tightening: 1, Growth: 2},
		{Capacity: 1, ErrorRate: 0.01, Tightening: 0.9, Growth: math.Inf(1)},
	} {
		assert.ErrorIs(t, bad.Validate(), ErrInvalidParams, "%+v", bad)
	}
	assert.NoError(t, Params{Capacity: 1, ErrorRate: 1e-9, Tightening: 0.9, Growth: 1}.Validate())
}

func TestLevelsOutsideTheChainAreRefused(t *testing.T) {
	even := Params{Capacity: 100, ErrorRate: 0.01, Tightening: 0.9, Growth: 1}
	_, err := even.Level(MaxSubFilters - 1)
	assert.NoError(t, err, "the last level a chain has")
	_, err = even.Level(MaxSubFilters)
	assert.ErrorIs(t, err, ErrInvalidParams)
	_, err = even.Level(-1)
	assert.ErrorIs(t, err, ErrInvalidParams)

	c, _ := newChain(t, small)
	e := c.SubFilters()[0].Entry
	e.Level = MaxSubFilters
	_, err = Attach(e, c.SubFilters()[0].Space())
	assert.ErrorIs(t, err, ErrInvalidParams, "an entry at a level the chain does not have")
}

func TestACapacityThatOverflowsIsTooLarge(t *testing.T) {
	p := Params{Capacity: 1 << 62, ErrorRate: 0.01, Tightening: 0.9, Growth: 2}
	_, err := p.levelCapacity(2)
	assert.ErrorIs(t, err, counting.ErrTooLarge, "2^64 keys")
	got, err := p.levelCapacity(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<62), got)
}

func TestRestoreChecksTheDirectory(t *testing.T) {
	c, st := newChain(t, Params{Capacity: 1, ErrorRate: 0.1, Tightening: 0.9, Growth: 1})
	require.NoError(t, c.Add(hashOf(1), 1))
	require.NoError(t, c.Add(hashOf(2), 2))
	subs := c.SubFilters()
	_, err := Restore(small, st, []*SubFilter{subs[1], subs[0]})
	assert.ErrorIs(t, err, ErrInvalidParams, "first ids out of order")
	_, err = Restore(small, st, []*SubFilter{subs[0], subs[0]})
	assert.ErrorIs(t, err, ErrInvalidParams, "level twice")
	_, err = Restore(small, st, nil)
	assert.ErrorIs(t, err, ErrInvalidParams)
	_, err = Restore(small, st, []*SubFilter{subs[0], nil})
	assert.ErrorIs(t, err, ErrInvalidParams, "a nil sub-filter")
	assert.ErrorContains(t, err, "sub-filter 1 is nil")
	same := *subs[1]
	same.FirstID = subs[0].FirstID
	_, err = Restore(small, st, []*SubFilter{subs[0], &same})
	assert.ErrorIs(t, err, ErrInvalidParams, "two sub-filters own the same first id")
	moved := *subs[1]
	moved.Level = -1
	_, err = Restore(small, st, []*SubFilter{subs[0], &moved})
	assert.ErrorIs(t, err, ErrInvalidParams, "a level outside the chain")
	assert.ErrorContains(t, err, "sub-filter 1 at level -1")
	r, err := Restore(small, st, subs)
	require.NoError(t, err)
	assert.True(t, r.Contains(hashOf(2)))
}

// Holds and Retirable answer what Remove and DropBefore would do, and change
// nothing: the engine asks them before it marks a clean file dirty.
func TestHoldsAndRetirableChangeNothing(t *testing.T) {
	c, _ := newChain(t, Params{Capacity: 2, ErrorRate: 0.1, Tightening: 0.9, Growth: 1})
	for id := range uint64(6) {
		require.NoError(t, c.Add(hashOf(int(id)), id*10))
	}
	require.Len(t, c.SubFilters(), 3)
	counts := func() (n []uint64) {
		for _, sub := range c.SubFilters() {
			n = append(n, sub.Count())
		}
		return n
	}
	before := counts()
	assert.NoError(t, c.Holds(hashOf(3), 30))
	assert.ErrorIs(t, c.Holds(hashOf(3), 0), ErrNotFound, "routed to a sub-filter that does not hold it")
	assert.ErrorIs(t, c.Holds(hashOf(100), 30), ErrNotFound)
	assert.Equal(t, 0, c.Retirable(10))
	assert.Equal(t, 1, c.Retirable(20))
	assert.Equal(t, 2, c.Retirable(1000), "never the newest")
	assert.Equal(t, before, counts())
	require.Len(t, c.SubFilters(), 3)

	require.Len(t, c.DropBefore(20), 1)
	assert.ErrorIs(t, c.Holds(hashOf(0), 0), ErrIDRetired)
	assert.ErrorIs(t, c.Remove(hashOf(0), 0), ErrIDRetired, "as Remove says")
	require.NoError(t, c.Remove(hashOf(3), 30))
	assert.ErrorIs(t, c.Holds(hashOf(3), 30), ErrNotFound, "removed")
}

func TestEstimatedKeys(t *testing.T) {
	c, _ := newChain(t, Params{Capacity: 20000, ErrorRate: 0.01, Tightening: 0.9, Growth: 2})
	for i := range 10000 {
		require.NoError(t, c.Add(hashOf(i%5000), 1)) // each key twice
	}
	sub := c.SubFilters()[0]
	assert.Equal(t, uint64(10000), sub.Count())
	assert.InDelta(t, 5000, sub.EstimatedKeys(), 250, "distinct keys, not adds")
}

func TestFixedChainNeverGrows(t *testing.T) {
	p := Params{Capacity: 10, ErrorRate: 0.01, Tightening: 0.9, Growth: 2, Fixed: true}
	assert.Equal(t, 0.01, p.LevelErrorRate(0), "the one sub-filter gets the whole rate")
	c, _ := newChain(t, p)
	assert.Equal(t, p, c.Params())
	sub := c.SubFilters()[0]
	assert.Zero(t, sub.ExpectedFalsePositiveRate(), "empty")
	for id := range uint64(25) {
		require.NoError(t, c.Add(hashOf(int(id)), id))
		if id+1 == sub.Capacity {
			assert.LessOrEqual(t, sub.ExpectedFalsePositiveRate(), 0.01, "at its capacity, within its rate")
		}
	}
	require.Len(t, c.SubFilters(), 1)
	assert.True(t, sub.Overfilled())
	assert.Greater(t, sub.ExpectedFalsePositiveRate(), 0.01, "overfilled, above its rate")
}

// A nil Storage or Space is refused with ErrInvalidParams, as bad
// parameters are, not dereferenced.
func TestNilStorageIsRefused(t *testing.T) {
	_, err := New(small, nil)
	assert.ErrorIs(t, err, ErrInvalidParams)
	assert.ErrorContains(t, err, "a nil Storage")
	c, st := newChain(t, small)
	_, err = Restore(small, nil, c.SubFilters())
	assert.ErrorIs(t, err, ErrInvalidParams)
	assert.ErrorContains(t, err, "a nil Storage")
	_, err = Attach(c.SubFilters()[0].Entry, nil)
	assert.ErrorIs(t, err, ErrInvalidParams)
	assert.ErrorContains(t, err, "a nil Space")
	_, err = Restore(small, st, c.SubFilters())
	assert.NoError(t, err)
}
