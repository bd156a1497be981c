package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
)

func FuzzDecodeSuperblock(f *testing.F) {
	b := make([]byte, sbSize)
	encodeSuperblock(b, Config{Capacity: 1000, ErrorRate: 0.01, Tightening: 0.9, Growth: 2, Seed: 5})
	f.Add(b)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := decodeSuperblock("fuzz", raw)
		if err != nil {
			assert.Equal(t, Config{}, c, "an error comes with no value")
			return
		}
		require.NoError(t, c.params().Validate())
		again := make([]byte, sbSize)
		encodeSuperblock(again, c)
		assert.Equal(t, raw[:sbCRC+4], again[:sbCRC+4], "a decoded superblock encodes to the same bytes")
	})
}

func FuzzDecodeDirectory(f *testing.F) {
	page := make([]byte, PageSize)
	encodeDirectory(page, directory{generation: 3, entries: []dirEntry{
		{Entry: scaling.Entry{Level: 0, FirstID: 0, Capacity: 100, Geometry: counting.Geometry{Blocks: 10, K: 7}}, Offset: HeaderBytes},
		{Entry: scaling.Entry{Level: 1, FirstID: 9, Capacity: 200, Geometry: counting.Geometry{Blocks: 20, K: 8}}, Offset: HeaderBytes + PageSize},
	}})
	f.Add(page, int64(HeaderBytes+2*PageSize), true)
	f.Fuzz(func(t *testing.T, raw []byte, fileSize int64, presence bool) {
		page := make([]byte, PageSize)
		copy(page, raw)
		d, valid, err := decodeDirectory(page, fileSize, presence)
		if err != nil || !valid {
			assert.Empty(t, d.entries, "an error or an invalid slot comes with no value")
			return
		}
		for _, e := range d.entries {
			require.NoError(t, e.Geometry.Validate())
			require.LessOrEqual(t, e.Offset+e.Geometry.Bytes()+presenceBytes(e.Geometry, presence), uint64(fileSize), "inside the file")
		}
	})
}

// The superblock decodes from its own bytes, with nothing after them; a
// byte fewer is not a filter.
func TestDecodeSuperblockAlone(t *testing.T) {
	cfg := Config{Capacity: 1000, ErrorRate: 0.01, Tightening: 0.9, Growth: 2, Seed: 5}
	b := make([]byte, sbSize)
	encodeSuperblock(b, cfg)
	got, err := decodeSuperblock("alone", b)
	require.NoError(t, err)
	assert.Equal(t, cfg, got)
	_, err = decodeSuperblock("short", b[:sbSize-1])
	assert.ErrorIs(t, err, ErrNotFilter)
}

// Regions may meet end to end: a sub-filter placed in the gap a retired one
// left can end on the byte where the next one starts. A block more is an
// overlap.
func TestDecodeDirectoryRegionsMayMeet(t *testing.T) {
	g := counting.Geometry{Blocks: PageSize / counting.BlockBytes, K: 7} // a page of counters, no presence bits
	d := directory{generation: 3, entries: []dirEntry{
		{Entry: scaling.Entry{Level: 0, FirstID: 0, Capacity: 100, Geometry: g}, Offset: HeaderBytes + PageSize},
		{Entry: scaling.Entry{Level: 1, FirstID: 9, Capacity: 100, Geometry: g}, Offset: HeaderBytes},
	}}
	page := make([]byte, PageSize)
	encodeDirectory(page, d)
	got, valid, err := decodeDirectory(page, HeaderBytes+2*PageSize, false)
	require.NoError(t, err)
	require.True(t, valid)
	assert.Equal(t, d, got)

	d.entries[1].Geometry.Blocks++
	encodeDirectory(page, d)
	_, valid, err = decodeDirectory(page, HeaderBytes+2*PageSize, false)
	assert.True(t, valid)
	assert.ErrorContains(t, err, "sub-filter 1 overlaps another")
}
