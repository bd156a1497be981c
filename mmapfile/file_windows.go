package mmapfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// Windows refuses to rename or remove a file that a handle without
// FILE_SHARE_DELETE holds open, as every handle os.OpenFile makes does, and
// a filter's file stays open for as long as it is used: a new filter could
// not take its name, nor a copy replace it. Files here are opened sharing
// deletion too (openFile), as Unix lets any open file be renamed.

// openFile is os.OpenFile for the flags this package opens with, sharing
// deletion too; other flags go to os.OpenFile.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&^(os.O_RDONLY|os.O_RDWR|os.O_CREATE|os.O_EXCL) != 0 {
		return os.OpenFile(name, flag, perm)
	}
	access := uint32(windows.GENERIC_READ)
	if flag&os.O_RDWR != 0 {
		access |= windows.GENERIC_WRITE
	}
	disposition := uint32(windows.OPEN_EXISTING)
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		disposition = windows.CREATE_NEW
	case flag&os.O_CREATE != 0:
		disposition = windows.OPEN_ALWAYS
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	path, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(path, access, share, nil, disposition, attrs, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// moveNoReplace renames from to to, failing with an error that is
// fs.ErrExist if to exists, in one step (MoveFileEx without
// MOVEFILE_REPLACE_EXISTING). It reports that it was done here.
func moveNoReplace(from, to string) (bool, error) {
	src, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return true, &fs.PathError{Op: "rename", Path: from, Err: err}
	}
	dst, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return true, &fs.PathError{Op: "rename", Path: to, Err: err}
	}
	if err := windows.MoveFileEx(src, dst, 0); err != nil {
		if errors.Is(err, windows.ERROR_ALREADY_EXISTS) || errors.Is(err, windows.ERROR_FILE_EXISTS) {
			return true, &fs.PathError{Op: "rename", Path: to, Err: fs.ErrExist}
		}
		return true, &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return true, nil
}

// viewFile is a handle of one mapping's own on the file: mmap-go flushes a
// Windows mapping through the handle it was made with, at Sync and at
// Unmap, so a region's handle must outlive the File's, which Close closes
// while regions may stay mapped. release closes it.
func viewFile(f *File) (file *os.File, release func() error, err error) {
	process := windows.CurrentProcess()
	var dup windows.Handle
	if err := windows.DuplicateHandle(process, windows.Handle(f.file.Fd()), process, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return nil, nil, os.NewSyscallError("DuplicateHandle", err)
	}
	file = os.NewFile(uintptr(dup), f.path)
	return file, file.Close, nil
}

// ReplacesOpenFiles is false: Windows renames a file over none that a
// process holds open, even sharing deletion, nor over one mapped (MoveOver
// then fails with an error that is os.ErrPermission).
const ReplacesOpenFiles = false
