package mmapfile

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openTemp(t *testing.T) *File {
	t.Helper()
	f, err := Open(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644, nil)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestGrowthNeverMovesAMapping(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(0, 4096))
	first, err := f.Map(0, 4096)
	require.NoError(t, err)
	first.Bytes()[10] = 7

	require.NoError(t, f.Reserve(4096, 1<<20))
	second, err := f.Map(4096, 1<<20)
	require.NoError(t, err)
	second.Bytes()[0] = 9

	assert.Equal(t, byte(7), first.Bytes()[10], "the first mapping is still valid after growth")
	require.NoError(t, first.Sync())
	require.NoError(t, second.Sync())
	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	assert.Equal(t, byte(7), raw[10])
	assert.Equal(t, byte(9), raw[4096])
	require.NoError(t, first.Unmap())
	require.NoError(t, second.Unmap())
}

func TestMapUnalignedOffset(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(0, 3*4096))
	r, err := f.Map(4096+64, 128)
	require.NoError(t, err)
	defer r.Unmap()
	r.Bytes()[0] = 1
	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	assert.Equal(t, byte(1), raw[4096+64])
	assert.Len(t, r.Bytes(), 128)
	// A page on Unix, the allocation granularity (64 KiB) on Windows.
	assert.Len(t, r.mapping, int((4096+64)%mapBoundary())+128, "mapped from the boundary below the region to its end, and no further")
}

func TestMapOutsideTheFile(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(0, 4096))
	for _, c := range [][2]int64{{0, 8192}, {4096, 1}, {-1, 10}, {0, 0}, {1 << 40, 4096}} {
		_, err := f.Map(c[0], c[1])
		assert.True(t, errors.Is(err, ErrOutOfRange), "%v: %v", c, err)
	}
}

// Where fallocate is missing (platforms other than Linux, file systems
// without it), room is reserved and released by writing zeros.
func TestReserveAndReleaseByWriting(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, growByWriting(f, 0, 4096))
	head, err := f.Map(0, 4096)
	require.NoError(t, err)
	defer head.Unmap()
	head.Bytes()[100] = 0xab

	// Reserving a range that starts inside the file keeps its bytes.
	const size = 3<<20 + 4096 // more than one chunk of zeros
	require.NoError(t, growByWriting(f, 0, size))
	sz, err := f.Size()
	require.NoError(t, err)
	assert.Equal(t, int64(size), sz)
	assert.Equal(t, byte(0xab), head.Bytes()[100], "bytes already in the file stay")
	require.NoError(t, growByWriting(f, 4096, 4096))
	sz, err = f.Size()
	require.NoError(t, err)
	assert.Equal(t, int64(size), sz, "a range inside the file reserves nothing more")

	r, err := f.Map(0, size)
	require.NoError(t, err)
	defer r.Unmap()
	for i := range r.Bytes() {
		r.Bytes()[i] = 0xff
	}
	require.NoError(t, zeroRange(f, 4096, size-2*4096))
	b := r.Bytes()
	assert.Equal(t, byte(0xff), b[4095], "before the range")
	assert.Equal(t, byte(0xff), b[size-4096], "after the range")
	for _, at := range []int{4096, 1 << 20, 1<<20 + 4096, 2 << 20, size - 4097} {
		assert.Equal(t, byte(0), b[at], "cleared, as the mapping sees it, at %d", at)
	}
}

func TestSecondLockIsRefused(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Lock())
	other, err := Open(f.Path(), os.O_RDWR, 0, nil)
	require.NoError(t, err)
	defer other.Close()
	assert.ErrorIs(t, other.Lock(), ErrLocked)
	// A mapping keeps the file description alive; Close still releases the lock.
	require.NoError(t, f.Reserve(0, 4096))
	r, err := f.Map(0, 4096)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.NoError(t, other.Lock(), "the lock goes with Close")
	require.NoError(t, r.Unmap())
	require.NoError(t, r.Unmap(), "a second Unmap does nothing")
}

func TestReadOnlyFile(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(0, 4096))
	ro, err := Open(f.Path(), os.O_RDONLY, 0, nil)
	require.NoError(t, err)
	defer ro.Close()
	assert.False(t, ro.Writable())
	r, err := ro.Map(0, 4096)
	require.NoError(t, err)
	assert.Equal(t, byte(0), r.Bytes()[0])
	require.NoError(t, r.Unmap())
	var pathErr *fs.PathError
	assert.ErrorAs(t, ro.Reserve(4096, 4096), &pathErr, "syscall failures keep their path")
}

func TestOpenFuncIsUsed(t *testing.T) {
	injected := errors.New("injected")
	_, err := Open("x", os.O_RDONLY, 0, func(string, int, fs.FileMode) (*os.File, error) { return nil, injected })
	assert.ErrorIs(t, err, injected)
}

func TestNegativeRanges(t *testing.T) {
	f := openTemp(t)
	assert.ErrorIs(t, f.Reserve(-1, 1), ErrOutOfRange)
	assert.ErrorIs(t, f.Release(0, -1), ErrOutOfRange)
	// Ranges whose end wraps around: writing zeros instead of fallocate
	// (a file system without it, or outside Linux) saw an end before the
	// file's and reserved nothing, without an error.
	assert.ErrorIs(t, f.Reserve(math.MaxInt64-100, 4096), ErrOutOfRange)
	assert.ErrorIs(t, f.Release(math.MaxInt64-100, 4096), ErrOutOfRange)
	// A range that ends at the largest offset is a range; the file system
	// refuses it (too large), not the check.
	err := f.Reserve(math.MaxInt64-4096, 4096)
	assert.Error(t, err)
	assert.NotErrorIs(t, err, ErrOutOfRange)
	require.NoError(t, f.Reserve(0, 4096))
}

func TestMapLargeIsAMapping(t *testing.T) {
	f := openTemp(t)
	const off, n = 3 * 4096, 5 << 20
	require.NoError(t, f.Reserve(0, off+n))
	plain, err := f.Map(off, n)
	require.NoError(t, err)
	large, err := f.MapLarge(off, n)
	require.NoError(t, err)
	require.Len(t, large.Bytes(), n)

	large.Bytes()[0], large.Bytes()[n-1] = 3, 4
	plain.Bytes()[n/2] = 5
	assert.Equal(t, []byte{3, 4}, []byte{plain.Bytes()[0], plain.Bytes()[n-1]}, "both map the same file")
	assert.Equal(t, byte(5), large.Bytes()[n/2])
	require.NoError(t, large.Sync())
	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	assert.Equal(t, []byte{3, 5, 4}, []byte{raw[off], raw[off+n/2], raw[off+n-1]})

	require.NoError(t, large.Unmap())
	require.NoError(t, large.Unmap(), "a second Unmap does nothing")
	require.NoError(t, plain.Unmap())
	_, err = f.MapLarge(off, 1<<40)
	assert.ErrorIs(t, err, ErrOutOfRange)
}

func TestMapLargeReadOnly(t *testing.T) {
	w := openTemp(t)
	require.NoError(t, w.Reserve(0, 4<<20))
	require.NoError(t, w.WriteAt([]byte{42}, 3<<20))
	r, err := Open(w.Path(), os.O_RDONLY, 0, nil)
	require.NoError(t, err)
	defer r.Close()
	m, err := r.MapLarge(0, 4<<20)
	require.NoError(t, err)
	defer m.Unmap()
	assert.Equal(t, byte(42), m.Bytes()[3<<20])
}

func TestWriteAtReportsItsError(t *testing.T) {
	w := openTemp(t)
	require.NoError(t, w.Reserve(0, 4096))
	r, err := Open(w.Path(), os.O_RDONLY, 0, nil)
	require.NoError(t, err)
	defer r.Close()
	assert.Error(t, r.WriteAt([]byte{1}, 0), "a file opened read-only refuses the write")
}

func TestEmptyRangesReserveAndReleaseNothing(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(4096, 0))
	require.NoError(t, f.Release(0, 0))
	sz, err := f.Size()
	require.NoError(t, err)
	assert.Zero(t, sz)
}

func TestAllocatedCountsReservedRoom(t *testing.T) {
	f := openTemp(t)
	const size = 1 << 20
	require.NoError(t, f.Reserve(0, size))
	got, err := f.Allocated()
	require.NoError(t, err)
	// Reserved room is on disk: at least its bytes, and not more than the
	// file system's rounding adds.
	assert.GreaterOrEqual(t, got, int64(size))
	assert.Less(t, got, int64(2*size))
}

func TestMapLargeUnalignedOffset(t *testing.T) {
	f := openTemp(t)
	require.NoError(t, f.Reserve(0, 3<<20))
	const off, n = 4096 + 64, 1 << 20
	require.NoError(t, f.WriteAt([]byte{1, 2, 3}, off-1))
	r, err := f.MapLarge(off, n)
	require.NoError(t, err)
	defer r.Unmap()
	require.Len(t, r.Bytes(), n)
	assert.Len(t, r.mapping, int(off%mapBoundary())+n, "mapped from the boundary below the region to its end, and no further")
	assert.Equal(t, []byte{2, 3}, r.Bytes()[:2], "the region starts at its offset, not its page")
	// The file's mapping lies inside the reservation that keeps its
	// addresses: a mapping past it would land on whatever the process
	// had mapped there.
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(r.reserved)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(r.mapping)))
	assert.GreaterOrEqual(t, at, lo)
	assert.LessOrEqual(t, at+uintptr(len(r.mapping)), lo+uintptr(len(r.reserved)))
}
