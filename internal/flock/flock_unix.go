//go:build unix

package flock

import (
	"errors"
	"os"

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
