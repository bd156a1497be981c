package mmapfile

import "errors"

var (
	// ErrLocked reports that another open file description holds the lock.
	ErrLocked = errors.New("mmapfile: file is locked by another writer")

	// ErrUnsupported reports an operation this platform cannot do.
	ErrUnsupported = errors.New("mmapfile: not supported on this platform")

	// ErrNotWritable reports a write into a region that cannot take one:
	// of a file opened read-only, or unmapped.
	ErrNotWritable = errors.New("mmapfile: region not writable")

	// ErrOutOfRange reports a region that does not lie inside the file.
	ErrOutOfRange = errors.New("mmapfile: region outside the file")
)
