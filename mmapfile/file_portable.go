//go:build !linux

package mmapfile

// Without fallocate, room is reserved by writing zeros and released room is
// cleared by writing zeros: correct, but the space is not given back.

func reserve(f *File, off, n int64) error { return growByWriting(f, off, n) }

func release(f *File, off, n int64) error { return zeroRange(f, off, n) }
