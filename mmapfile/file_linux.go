//go:build linux

package mmapfile

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

func reserve(f *File, off, n int64) error {
	if n == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.file.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return growByWriting(f, off, n)
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.path, Err: err}
	}
	return nil
}

func release(f *File, off, n int64) error {
	if n == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return zeroRange(f, off, n)
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.path, Err: err}
	}
	return nil
}
