//go:build unix

package counting

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A writer asks for a key's block before it takes the lock that keeps the
// sub-filter mapped: Prefetch must not read the block, or a sub-filter
// retired and unmapped meanwhile would kill the process.
func TestPrefetchOfAnUnmappedFilterDoesNotFault(t *testing.T) {
	g, err := Plan(100_000, 0.01)
	require.NoError(t, err)
	counters := mapped(t, g.Bytes())
	presence := mapped(t, PresenceBytes(g))
	f, err := New(counters, presence, g, 9)
	require.NoError(t, err)
	h := NewHasher(3)
	for i := range 100 {
		f.Prefetch(h.Key(key(i)))
	}
	require.NoError(t, unix.Munmap(counters))
	require.NoError(t, unix.Munmap(presence))
	for i := range 10_000 {
		f.Prefetch(h.Key(key(i)))
	}
}

// Prefetch asks for the lines a change of the key reads: its block and its
// presence bits, at the addresses the checked accessors give.
func TestPrefetchAsksForTheKeysLines(t *testing.T) {
	for _, presence := range []bool{true, false} {
		g, err := Plan(100_000, 0.01)
		require.NoError(t, err)
		f, _ := newTestFilter(t, g, presence)
		for block := range g.Blocks {
			counters, bits := f.lines(block)
			require.Equal(t, unsafe.Pointer(f.blockWords(block)), counters, "block %d", block)
			if presence {
				require.Equal(t, unsafe.Pointer(f.presenceOf(block)), bits, "block %d", block)
			} else {
				require.Nil(t, bits)
			}
		}
	}
}

func mapped(t *testing.T, size uint64) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	return b
}
