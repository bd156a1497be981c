//go:build linux

package engine

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Open maps the file and reads the header only: with the file dropped from
// the page cache, no page of counters is resident after Open.
func TestOpenReadsNoCounters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 2_000_000, ErrorRate: 0.01, Growth: 1})
	for i := range uint64(10_000) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, f.Close())
	dropPageCache(t, f.Path())

	g, err := Open(f.Path(), nil)
	require.NoError(t, err)
	defer g.Close()
	region := spaceOf(g.chain.SubFilters()[0]).region.Bytes()
	require.Greater(t, len(region), 8<<20)
	assert.Zero(t, residentPages(t, region), "Open touched no counter and no presence bit")

	require.True(t, g.Contains(key(1)))
	assert.Positive(t, residentPages(t, region), "the check itself is sound: a lookup faults a page in")
}

func dropPageCache(t *testing.T, path string) {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	require.NoError(t, unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED))
}

func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	page := os.Getpagesize()
	// mincore wants a page-aligned address; the counters start on a page.
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	require.Zero(t, errno, "mincore: %v", errno)
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
