package mmapfile

import "errors"

var (
	// ErrLocked reports that another open file description holds the lock.
	ErrLocked = errors.New("mmapfile: file is locked by another writer")

	// ErrUnsupported reports an operation this platform cannot do.
	ErrUnsupported = errors.New("mmapfile: not supported on this platform")

	// ErrOutOfRange reports a region that does not lie inside the file.
	ErrOutOfRange = errors.New("mmapfile: region outside the file")
)
