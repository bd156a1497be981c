//go:build !linux

package mmapfile

// Without fallocate, room is reserved by writing zeros and released room is
// cleared by writing zeros: correct, but the space is not given back.

func reserve(f *File, off, n int64) error { return growByWriting(f, off, n) }

func release(f *File, off, n int64) error { return zeroRange(f, off, n) }

// mapLarge is mapPortable: large pages are only asked for on Linux.
func mapLarge(f *File, start, length int64) (*Region, error) { return mapPortable(f, start, length) }

func largeBytes(uintptr) (int64, error) { return 0, nil }

// populate stores into each page: MADV_POPULATE_WRITE is Linux's.
func populate(b []byte) error {
	touchPages(b)
	return nil
}
