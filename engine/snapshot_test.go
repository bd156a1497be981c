package engine

import (
	"bytes"
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
	} {
		_, err := NewSnapshot(c.cfg, 1, c.subs, c.parts)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
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
		}
	}
	_, err := NewPlacement(Config{Seed: 1}, []SubFilterStats{{K: 0, Blocks: 1}})
	assert.ErrorIs(t, err, ErrCorrupt)
}
