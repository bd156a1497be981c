//go:build unix

package mmapfile

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseRandom turns readahead off for a mapping; it is only a hint.
func adviseRandom(b []byte) { _ = unix.Madvise(b, unix.MADV_RANDOM) }

func allocated(f *File) (int64, error) {
	info, err := f.file.Stat()
	if err != nil {
		return 0, err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512, nil
	}
	return info.Size(), nil
}

// vacate maps anonymous read-only pages over the mapping, MAP_FIXED, which
// replaces the file's pages in place.
func vacate(mapping []byte) error {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(mapping)), uintptr(len(mapping)),
		unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_FIXED)
	return err
}

// mapBoundary is what mappings start at a multiple of: a page.
func mapBoundary() int64 { return int64(os.Getpagesize()) }
