package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows byte-range locks are mandatory: other handles cannot read or
// write a locked range. The lock is on the last byte of the 64-bit offset
// space, which no file reaches, so that a reader's read of the file is
// never refused; the system drops it with the handle, when its process
// dies too.
const lockOffset = ^uint32(0)

func lock(file *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset, OffsetHigh: lockOffset}
	err := windows.LockFileEx(windows.Handle(file.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrHeld
	}
	if err != nil {
		return &os.PathError{Op: "LockFileEx", Path: file.Name(), Err: err}
	}
	return nil
}

func unlock(file *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset, OffsetHigh: lockOffset}
	if err := windows.UnlockFileEx(windows.Handle(file.Fd()), 0, 1, 0, &ol); err != nil {
		return &os.PathError{Op: "UnlockFileEx", Path: file.Name(), Err: err}
	}
	return nil
}

// named is true: a file open here cannot be removed by another process,
// as Go opens files without FILE_SHARE_DELETE, so the file Make just made
// keeps its name.
func named(*os.File) bool { return true }

// removeLocked closes file, which this process has locked, then removes
// it: Windows removes no file that a handle without FILE_SHARE_DELETE
// holds open, as every Go handle is, this one too. A maker cannot lose its
// name in between, as its own handle, open from the making, keeps any
// process from removing the file.
func removeLocked(file *os.File) {
	name := file.Name()
	_ = file.Close()
	_ = os.Remove(name)
}
