package engine

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSnapshotOfAFilter(t *testing.T) {
	f, _ := exportedFilter(t)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, f.Stats().MemSeq, snap.MemSeq())
	assert.Equal(t, f.Stats().SubFilters, snap.SubFilters())
	for i, sub := range f.chain.SubFilters() {
		assert.Equal(t, spaceOf(sub).counters, snap.Counters(i))
	}
	keys := keysFrom(0, 10_000)
	for _, k := range keys {
		require.Equal(t, f.Contains(k), snap.Contains(k))
		require.Equal(t, f.Contains(k), snap.ContainsString(string(k)))
	}

	// Put together from its parts, it exports and imports as the filter.
	parts := make([][]byte, len(snap.SubFilters()))
	for i := range parts {
		parts[i] = snap.Counters(i)
	}
	again, err := NewSnapshot(snap.Config(), snap.MemSeq(), snap.SubFilters(), parts)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, again.Export(&buf))
	g, err := Import(tempPath(t), &buf, nil)
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, f.ContainsBatch(keys, nil), g.ContainsBatch(keys, nil))
	assert.Equal(t, f.Stats().SubFilters, g.Stats().SubFilters)
}

func TestNewSnapshotRefusesBadParts(t *testing.T) {
	f, _ := exportedFilter(t)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	subs := snap.SubFilters()
	parts := [][]byte{snap.Counters(0), snap.Counters(1)}
	for name, c := range map[string]struct {
		subs  []SubFilterStats
		parts [][]byte
		cfg   Config
	}{
		"short counters":   {subs, [][]byte{parts[0], parts[1][:10]}, snap.Config()},
		"missing region":   {subs, parts[:1], snap.Config()},
		"ids out of order": {[]SubFilterStats{subs[1], subs[0]}, [][]byte{parts[1], parts[0]}, snap.Config()},
		"bad parameters":   {subs, parts, Config{Capacity: 0, ErrorRate: 0.01, Tightening: 0.9, Growth: 1}},
		"bad geometry":     {[]SubFilterStats{{Level: 0, K: 99, Blocks: 1}}, [][]byte{make([]byte, 64)}, snap.Config()},
		"ids equal":        {[]SubFilterStats{subs[0], withFirstID(subs[1], subs[0].FirstID)}, parts, snap.Config()},
		"level 64":         {[]SubFilterStats{subs[0], withLevel(subs[1], MaxSubFilters)}, parts, snap.Config()},
	} {
		_, err := NewSnapshot(c.cfg, 1, c.subs, c.parts)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
}

func withFirstID(s SubFilterStats, id uint64) SubFilterStats { s.FirstID = id; return s }
func withLevel(s SubFilterStats, level int) SubFilterStats   { s.Level = level; return s }

// NewSnapshot takes the parts of a chain that holds all the sub-filters it
// can, and says a sub-filter is overfilled only past its capacity.
func TestNewSnapshotAtItsBounds(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 2, ErrorRate: 0.01, Growth: 1, Seed: 3})
	fillChain(t, f, MaxSubFilters, 0)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	subs := slices.Clone(snap.SubFilters())
	require.Len(t, subs, MaxSubFilters)
	parts := make([][]byte, len(subs))
	for i := range parts {
		parts[i] = snap.Counters(i)
	}
	subs[0].Count = subs[0].Capacity
	subs[1].Count = subs[1].Capacity + 1
	full, err := NewSnapshot(snap.Config(), snap.MemSeq(), subs, parts)
	require.NoError(t, err)
	assert.False(t, full.SubFilters()[0].Overfilled, "at its capacity")
	assert.True(t, full.SubFilters()[1].Overfilled, "past its capacity")
}

func TestPlacementAnswersAsTheFilter(t *testing.T) {
	for _, cfg := range []Config{
		{Capacity: 300, ErrorRate: 0.01, Growth: 1, Seed: 5},
		{Capacity: 20, ErrorRate: 0.5, Growth: 1, Seed: 5}, // flat
	} {
		f := newTestFilter(t, cfg)
		fillChain(t, f, 3, 0)
		snap, err := f.Snapshot()
		require.NoError(t, err)
		p, err := NewPlacement(snap.Config(), snap.SubFilters())
		require.NoError(t, err)
		for i := range uint64(20_000) {
			k := p.Place(key(i))
			present := false
			for s := range snap.SubFilters() {
				off, n := k.Range(s)
				present = present || k.Holds(s, snap.Counters(s)[off:off+n])
			}
			require.Equal(t, f.Contains(key(i)), present, "key %d", i)
			require.Equal(t, k, p.PlaceString(string(key(i))), "key %d as a string", i)
		}
	}
	_, err := NewPlacement(Config{Seed: 1}, []SubFilterStats{{K: 0, Blocks: 1}})
	assert.ErrorIs(t, err, ErrCorrupt)
}

// TestCopyCounters: CopyCounters copies a sub-filter's counters in pieces,
// each between two changes, and refuses what it cannot copy.
func TestCopyCounters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 120_000, ErrorRate: 0.01, Growth: 1, Seed: 11})
	for i := range uint64(130_000) {
		require.NoError(t, f.Add(key(i), i))
	}
	subs := f.Stats().SubFilters
	require.Len(t, subs, 2)
	require.Greater(t, subs[0].Bytes, uint64(pieceBytes), "more than one piece")
	snap, err := f.Snapshot()
	require.NoError(t, err)
	for i, sub := range subs {
		whole := make([]byte, sub.Bytes)
		require.NoError(t, f.CopyCounters(sub.Level, 0, whole))
		assert.Equal(t, snap.Counters(i), whole, "sub-filter %d whole", i)
		part := make([]byte, 128)
		require.NoError(t, f.CopyCounters(sub.Level, sub.Bytes-192, part))
		assert.Equal(t, snap.Counters(i)[sub.Bytes-192:][:128], part, "sub-filter %d, two blocks near its end", i)
	}

	level := subs[0].Level
	for _, c := range []struct {
		offset, length uint64
	}{{1, 64}, {0, 65}, {subs[0].Bytes - 64, 128}, {subs[0].Bytes + 64, 64}, {1 << 63, 64}} {
		err := f.CopyCounters(level, c.offset, make([]byte, c.length))
		assert.ErrorIs(t, err, ErrInvalidInput, "%d bytes at %d", c.length, c.offset)
	}
	_, err = f.DropBefore(subs[1].FirstID)
	require.NoError(t, err)
	assert.ErrorIs(t, f.CopyCounters(level, 0, make([]byte, 64)), ErrNoSubFilter)
	assert.ErrorIs(t, f.CopyCounters(99, 0, make([]byte, 64)), ErrNoSubFilter)

	reader, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer reader.Close()
	assert.ErrorIs(t, reader.CopyCounters(subs[1].Level, 0, make([]byte, 64)), ErrReadOnly)
	require.NoError(t, f.Close())
	assert.ErrorIs(t, f.CopyCounters(subs[1].Level, 0, make([]byte, 64)), ErrClosed)
}

// TestCopySpansIsExactAtItsSequence: CopySpans copies every span under one
// hold of the lock, so what it copies is the filter at the sequence it
// returns, however fast the filter changes. A model of the counters, kept
// from what OnCommit reports, gives the counters at each sequence.
func TestCopySpansIsExactAtItsSequence(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 200_000, ErrorRate: 0.01, Growth: 1, Fixed: true, Seed: 24})
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sub := snap.SubFilters()[0]
	model := bytes.Clone(snap.Counters(0))
	// history[i] is the change of sequence start+1+i, its new bytes.
	var history [][]CounterWrite
	var mu sync.Mutex
	start, _, err := f.OnCommit(func(c *Change) {
		mu.Lock()
		defer mu.Unlock()
		var writes []CounterWrite
		for _, w := range c.Counters {
			writes = append(writes, CounterWrite{w.Level, w.Offset, bytes.Clone(w.Bytes)})
		}
		history = append(history, writes)
	})
	require.NoError(t, err)
	require.Equal(t, snap.MemSeq(), start)

	// Every fourth block of the sub-filter, 3 MB apart at most: a change
	// lands between two of them unless the lock is held for all.
	var spans []Span
	for off := uint64(0); off < sub.Bytes; off += 4 * 64 {
		spans = append(spans, Span{Level: sub.Level, Offset: off, Bytes: 64})
	}
	dst := make([]byte, 64*len(spans))
	done := make(chan struct{})
	var stop atomic.Bool
	defer func() { stop.Store(true); <-done }()
	go func() {
		defer close(done)
		for i := uint64(0); i < 60_000 && !stop.Load(); i++ {
			if err := f.Add(key(i), i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	applied := start
	for copies, running := 0, true; running; copies++ {
		select {
		case <-done:
			running = false
		default:
		}
		st, err := f.CopySpans(spans, dst)
		require.NoError(t, err)
		mu.Lock()
		for ; applied < st.MemSeq; applied++ {
			for _, w := range history[applied-start] {
				copy(model[w.Offset:], w.Bytes)
			}
		}
		mu.Unlock()
		for i, s := range spans {
			if !bytes.Equal(model[s.Offset:][:64], dst[64*i:][:64]) {
				require.Failf(t, "a block differs", "copy %d at sequence %d: block at %d", copies, st.MemSeq, s.Offset)
			}
		}
		assert.Equal(t, st.MemSeq-1, st.Count, "the Stats of the copy's moment")
	}
}

// TestCopySpansRefuses: CopySpans skips levels the chain does not hold and
// refuses spans it cannot copy.
func TestCopySpansRefuses(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1_000, ErrorRate: 0.01, Seed: 25})
	for i := range uint64(500) {
		require.NoError(t, f.Add(key(i), i))
	}
	sub := f.Stats().SubFilters[0]
	snap, err := f.Snapshot()
	require.NoError(t, err)
	dst := bytes.Repeat([]byte{0xAA}, 320)
	st, err := f.CopySpans([]Span{{sub.Level, 0, 64}, {sub.Level + 1, 0, 64}, {MaxSubFilters, 0, 64}, {-1, 0, 64}, {sub.Level, sub.Bytes - 64, 64}}, dst)
	require.NoError(t, err)
	assert.Equal(t, snap.Counters(0)[:64], dst[:64])
	assert.Equal(t, bytes.Repeat([]byte{0xAA}, 192), dst[64:256], "levels not held, or past any chain's, are left as they were")
	assert.Equal(t, snap.Counters(0)[sub.Bytes-64:], dst[256:])
	assert.Equal(t, []SubFilterStats{sub}, st.SubFilters)

	for _, s := range []Span{{sub.Level, 1, 64}, {sub.Level, 0, 65}, {sub.Level, sub.Bytes - 64, 128}, {sub.Level, sub.Bytes, 64}, {sub.Level, 1 << 63, 64}} {
		_, err := f.CopySpans([]Span{s}, make([]byte, 256))
		assert.ErrorIs(t, err, ErrInvalidInput, "%+v", s)
	}
	_, err = f.CopySpans([]Span{{sub.Level, 0, 128}}, make([]byte, 64))
	assert.ErrorIs(t, err, ErrInvalidInput, "dst too short")
	// Lengths whose sum wraps around to what dst holds, of a level the
	// chain does not hold, which is skipped rather than read.
	_, err = f.CopySpans([]Span{{sub.Level + 1, 0, 1 << 63}, {sub.Level + 1, 0, 1 << 63}, {sub.Level, 0, 64}}, make([]byte, 64))
	assert.ErrorIs(t, err, ErrInvalidInput, "lengths that wrap around")

	reader, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer reader.Close()
	_, err = reader.CopySpans(nil, nil)
	assert.ErrorIs(t, err, ErrReadOnly)
}

// TestStatsAgreeWithTheirSequence: in the writing process, Stats is taken
// between two changes, so its sequence and tallies agree however fast the
// filter changes: with adds alone, every change but the file's creation
// counts one key.
func TestStatsAgreeWithTheirSequence(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1_000_000, ErrorRate: 0.01, Seed: 12})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range uint64(20_000) {
			if err := f.Add(key(i), i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	checked := 0
	for running := true; running; checked++ {
		select {
		case <-done:
			running = false
		default:
		}
		s := f.Stats()
		require.Equal(t, s.MemSeq-1, s.Count, "after %d checks", checked)
	}
	t.Logf("%d checks", checked)
}
