//go:build !windows

package mmapfile

import (
	"io/fs"
	"os"
)

// openFile is os.OpenFile: any open file can be renamed here.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// moveNoReplace is not done here (false): MoveTo links, then unlinks.
func moveNoReplace(string, string) (bool, error) { return false, nil }

// viewFile is the file itself: a mapping here needs no handle once made.
func viewFile(f *File) (file *os.File, release func() error, err error) {
	return f.file, func() error { return nil }, nil
}

// ReplacesOpenFiles is true: MoveOver renames over a file whatever holds
// it open, which keeps its contents under the old name's handles.
const ReplacesOpenFiles = true
