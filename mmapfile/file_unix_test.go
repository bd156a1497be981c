//go:build unix

package mmapfile

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVacateLeavesZerosAndTheFile: after Vacate a region reads as zeros
// instead of faulting, the file keeps what was written through it, and the
// file is mapped no more, plainly or with large pages.
func TestVacateLeavesZerosAndTheFile(t *testing.T) {
	for name, mapRange := range map[string]func(*File, int64, int64) (*Region, error){
		"Map":      (*File).Map,
		"MapLarge": (*File).MapLarge,
	} {
		t.Run(name, func(t *testing.T) {
			f := openTemp(t)
			const off, n = 4096, 3 << 20
			require.NoError(t, f.Reserve(0, off+n))
			r, err := mapRange(f, off, n)
			require.NoError(t, err)
			r.Bytes()[0], r.Bytes()[n-1] = 7, 8
			require.NoError(t, r.Sync())
			mapped := mappingsOf(t, f.Path())

			require.NoError(t, r.Vacate())
			require.NoError(t, r.Vacate(), "a second Vacate does nothing")
			assert.Equal(t, make([]byte, n), r.Bytes(), "the addresses read as zeros")
			raw, err := os.ReadFile(f.Path())
			require.NoError(t, err)
			assert.Equal(t, []byte{7, 8}, []byte{raw[off], raw[off+n-1]}, "the file keeps its bytes")
			if mapped >= 0 {
				assert.Positive(t, mapped, "mapped before Vacate")
				assert.Zero(t, mappingsOf(t, f.Path()), "mapped after Vacate")
			}
			require.NoError(t, r.Unmap())
			require.NoError(t, r.Vacate(), "Vacate after Unmap does nothing")
		})
	}
}

// mappingsOf counts the lines of /proc/self/maps that map path, or returns
// -1 where the system has no such list.
func mappingsOf(t *testing.T, path string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	return bytes.Count(maps, []byte(path+"\n"))
}
