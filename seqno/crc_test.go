package seqno

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The record's checksum is crc32c of its sequence, count and spans, for
// every number of spans and any bytes: the format's checksum whichever way
// it is computed.
func TestRecordChecksumIsCRC32C(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	region := make([]byte, JournalSize)
	j, err := NewJournal(region)
	require.NoError(t, err)
	for range 200 {
		b := region[undoSpans:]
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		seq := rng.Uint64()
		for count := 0; count <= MaxSpans; count++ {
			spans := b[:count*spanSize]
			want := crc32.Checksum(append(binary.LittleEndian.AppendUint32(
				binary.LittleEndian.AppendUint64(nil, seq), uint32(count)), spans...), castagnoli)
			require.Equal(t, want, j.checksum(seq, count), "%d spans", count)
		}
	}
}

// BenchmarkChecksum is the checksum of an undo record of two spans (an add
// or remove in a blocked sub-filter: its block and its tallies) and of
// three: its throughput, calls overlapping, and its latency, each call
// waiting for the one before as a change's writes wait for its record's
// seal.
func BenchmarkChecksum(b *testing.B) {
	region := make([]byte, JournalSize)
	j, err := NewJournal(region)
	require.NoError(b, err)
	for _, count := range []int{2, 3} {
		b.Run(fmt.Sprintf("spans=%d", count), func(b *testing.B) {
			for b.Loop() {
				j.checksum(1, count)
			}
		})
		b.Run(fmt.Sprintf("spans=%d/latency", count), func(b *testing.B) {
			seq := uint64(1)
			for b.Loop() {
				seq = uint64(j.checksum(seq, count))
			}
		})
	}
}
