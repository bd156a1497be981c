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
