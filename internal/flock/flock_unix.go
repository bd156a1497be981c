//go:build unix

package flock

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func lock(file *os.File) error {
	err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrHeld
	}
	if err != nil {
		return &os.PathError{Op: "flock", Path: file.Name(), Err: err}
	}
	return nil
}

func unlock(file *os.File) error {
	if err := unix.Flock(int(file.Fd()), unix.LOCK_UN); err != nil {
		return &os.PathError{Op: "flock", Path: file.Name(), Err: err}
	}
	return nil
}

// named reports whether file still has a name: RemoveUnlocked in another
// process may have removed it. A file whose links cannot be counted is
// taken to have one.
func named(file *os.File) bool {
	info, err := file.Stat()
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 0
}

// removeLocked removes file, which this process has locked, then closes
// it: a maker that locks the file in between finds the lock held, and
// never a name that is about to go.
func removeLocked(file *os.File) {
	_ = os.Remove(file.Name())
	_ = file.Close()
}
