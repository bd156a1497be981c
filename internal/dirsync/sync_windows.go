package dirsync

import (
	"errors"
	"os"
)

// syncDir cannot sync a directory on Windows, which refuses to flush one
// (FlushFileBuffers needs a handle opened for writing, and a directory
// opens for reading): NTFS journals the names in a directory itself.
func syncDir(*os.File) error { return errors.ErrUnsupported }
