// Package dirsync makes a name made or renamed in a directory durable, for
// the engine's new files and the command's replaced outputs alike.
package dirsync

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Of syncs the directory that holds path, where the system can; where it
// cannot, that is not an error.
func Of(path string) error {
	name := filepath.Dir(path)
	dir, err := os.Open(name)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := syncDir(dir); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return &fs.PathError{Op: "fsync", Path: name, Err: err}
	}
	return nil
}
