package mmapfile

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A large mapping sits at an address congruent to its file offset modulo
// 2 MiB, so that the file's 2 MiB pages can be mapped whole; where the
// kernel keeps this file system's pages large, they are.
func TestMapLargeUsesLargePages(t *testing.T) {
	f := openTemp(t)
	const off, n = 3 * 4096, 8 << 20
	require.NoError(t, f.Reserve(0, off+n))
	r, err := f.MapLarge(off, n)
	require.NoError(t, err)
	defer r.Unmap()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(r.Bytes())))
	assert.Zero(t, (addr-off)%largePage, "address %#x for file offset %#x", addr, off)

	for i := 0; i < n; i += 4096 {
		r.Bytes()[i] = 1
	}
	if !largeFoliosExpected(t, f.Path()) {
		return
	}
	pmd, err := r.LargeBytes()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, pmd, int64(4<<20), "at least two of the four whole 2 MiB ranges are mapped large")
}

// largeFoliosExpected reports whether this kernel and file system keep file
// pages in 2 MiB folios on request: transparent huge pages not "never",
// ext4 from Linux 6.16 or XFS from 6.1.
func largeFoliosExpected(t *testing.T, path string) bool {
	setting, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(setting), "[never]") {
		t.Logf("transparent huge pages off: %q", setting)
		return false
	}
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(path, &fs))
	var uts unix.Utsname
	require.NoError(t, unix.Uname(&uts))
	release := unix.ByteSliceToString(uts.Release[:])
	parts := strings.SplitN(release, ".", 3)
	major, _ := strconv.Atoi(parts[0])
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(strings.TrimLeftFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	}
	version := major*100 + minor
	switch {
	case fs.Type == unix.EXT4_SUPER_MAGIC && version >= 616, fs.Type == unix.XFS_SUPER_MAGIC && version >= 601:
		return true
	}
	t.Logf("file system %#x on Linux %s: large folios not expected", fs.Type, release)
	return false
}

// TestVacatedLargeMappingIsOneMapping: Vacate covers a large mapping's
// whole reservation, the inaccessible slack around the file's range too, so
// that the kernel keeps one mapping for it where it would keep three: a
// process that closes many large-page filters before the collector gives
// their addresses back would otherwise near the kernel's limit of mappings.
func TestVacatedLargeMappingIsOneMapping(t *testing.T) {
	f := openTemp(t)
	const n = 3 << 20
	require.NoError(t, f.Reserve(0, n))
	r, err := f.MapLarge(0, n)
	require.NoError(t, err)
	defer r.Unmap()
	require.Greater(t, len(r.reserved), n, "a reservation around the mapping")
	require.NoError(t, r.Vacate())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(r.reserved)))
	end := start + uintptr(len(r.reserved))
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	var covering []string
	for line := range strings.Lines(string(maps)) {
		var from, to uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &from, &to); err == nil && from < end && start < to {
			covering = append(covering, strings.TrimSpace(line))
		}
	}
	assert.Len(t, covering, 1, "mappings over the vacated reservation: %q", covering)
}

// fallocate gives released room back to the file system (Linux only:
// elsewhere Release clears the room by writing zeros).
func TestReleaseGivesSpaceBack(t *testing.T) {
	f := openTemp(t)
	const size = 8 << 20
	require.NoError(t, f.Reserve(0, size))
	r, err := f.Map(0, size)
	require.NoError(t, err)
	defer r.Unmap()
	for i := range r.Bytes() {
		r.Bytes()[i] = 0xff
	}
	require.NoError(t, r.Sync())
	before, err := f.Allocated()
	require.NoError(t, err)

	require.NoError(t, f.Release(4096, size-4096))
	after, err := f.Allocated()
	require.NoError(t, err)
	assert.Less(t, after, before/2, "released blocks are returned to the file system")
	assert.Equal(t, byte(0), r.Bytes()[size-1], "released room reads as zeros")
	assert.Equal(t, byte(0xff), r.Bytes()[0])
	sz, err := f.Size()
	require.NoError(t, err)
	assert.Equal(t, int64(size), sz, "release keeps the size")
}
