//go:build unix

package mmapfile

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

func lock(f *File) error {
	err := unix.Flock(int(f.file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	if err != nil {
		return &fs.PathError{Op: "flock", Path: f.path, Err: err}
	}
	return nil
}

// adviseRandom turns readahead off for a mapping; it is only a hint.
func adviseRandom(b []byte) { _ = unix.Madvise(b, unix.MADV_RANDOM) }

func unlock(f *File) error {
	if err := unix.Flock(int(f.file.Fd()), unix.LOCK_UN); err != nil {
		return &fs.PathError{Op: "flock", Path: f.path, Err: err}
	}
	return nil
}

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
