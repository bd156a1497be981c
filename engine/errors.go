package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns is, or wraps, one of these
// (or a *fs.PathError from the operating system), so callers branch with
// errors.Is.
var (
	// ErrNotFound: Remove of a key the routed sub-filter does not hold.
	// Nothing was changed.
	ErrNotFound = errors.New("engine: key not found")

	// ErrExists: Create of a path that already exists.
	ErrExists = errors.New("engine: file already exists")

	// ErrCorrupt: the file is damaged, truncated or not a tallybloom filter.
	ErrCorrupt = errors.New("engine: corrupt file")

	// ErrNotFilter: the file is not a tallybloom filter at all (no magic
	// number). Such an error is also ErrCorrupt.
	ErrNotFilter = errors.New("engine: not a tallybloom filter")

	// ErrVersion: the file was written by a newer format version.
	ErrVersion = errors.New("engine: unsupported format version")

	// ErrUnclean: the machine crashed after changes that were not flushed, so
	// some may be lost. The error is an *UncleanError carrying the last
	// durable sequence.
	ErrUnclean = errors.New("engine: changes since the last flush may be lost")

	// ErrLocked: another writer has the file open.
	ErrLocked = errors.New("engine: file is locked by another writer")

	// ErrReadOnly: a change on a filter opened read-only, or a call that
	// needs the writer's lock (CopyCounters).
	ErrReadOnly = errors.New("engine: filter is read-only")

	// ErrClosed: a call on a closed filter.
	ErrClosed = errors.New("engine: filter is closed")

	// ErrInvalidConfig: a Config or Options value that cannot be used.
	ErrInvalidConfig = errors.New("engine: invalid config")

	// ErrInvalidInput: an argument that cannot be used, such as batches of
	// keys and ids of different lengths, an empty path, or a nil reader or
	// writer for an export.
	ErrInvalidInput = errors.New("engine: invalid input")

	// ErrIDRetired: an id older than every retained sub-filter; its
	// sub-filter was dropped.
	ErrIDRetired = errors.New("engine: id older than every retained sub-filter")

	// ErrChainFull: the chain holds the most sub-filters it can and the add
	// needs a new one; retire old ones with DropBefore.
	ErrChainFull = errors.New("engine: chain full")

	// ErrUnsupported: this platform cannot do what was asked.
	ErrUnsupported = errors.New("engine: unsupported")

	// ErrNoSubFilter: CopyCounters of a level the chain does not hold, such
	// as one retired since the caller saw it.
	ErrNoSubFilter = errors.New("engine: no sub-filter at that level")

	// ErrBusy: a filter opened read-only could not be copied (Snapshot,
	// Export, ExportFrozen), or its directory read by Open, because its
	// writer, another process, changed it during every attempt. Nothing was
	// written.
	ErrBusy = errors.New("engine: filter kept changing during the copy")
)

// UncleanError is returned by Open when the machine crashed with changes made
// since the last Flush. Every change up to DurableSeq is on disk; later ones
// may be partly lost, so the file is not to be trusted. Make it again:
// rebuild it from the keys, or restore a copy (mirror.Restore, or Import
// with Options.Replace) and replay the changes after the copy's own
// sequence, its Stats().MemSeq. Replaying from DurableSeq + 1 is right only
// for a copy taken at the last Flush: one taken since (a mirror that kept
// up) is ahead of it, and a change replayed twice counts twice, so a key
// added twice outlives its remove.
type UncleanError struct {
	Path       string
	DurableSeq uint64
	// Config is the filter's parameters, seed included, from the file's
	// superblock, which is written once at creation and checked by its
	// checksum: what a rebuild makes the new filter with.
	Config Config
}

func (e *UncleanError) Error() string {
	return fmt.Sprintf("%v: %s: durable up to sequence %d", ErrUnclean, e.Path, e.DurableSeq)
}

// Is makes errors.Is(err, ErrUnclean) true.
func (e *UncleanError) Is(target error) bool { return target == ErrUnclean }

// BatchError is returned by AddBatch and RemoveBatch when the change of one
// key fails: the changes of the keys before Index were made and stay; the
// key at Index and those after it were not changed. Err is that change's own
// error, which errors.Is sees through.
type BatchError struct {
	Op    string // "add" or "remove"
	Index int    // of the key that failed
	Len   int    // of the batch
	Err   error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("engine: %s batch: key %d of %d: %v", e.Op, e.Index, e.Len, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// notFilterError is ErrNotFilter and ErrCorrupt at once.
type notFilterError struct{ path string }

func (e *notFilterError) Error() string {
	return fmt.Sprintf("%v: %s (no magic number)", ErrNotFilter, e.path)
}

func (e *notFilterError) Is(target error) bool { return target == ErrNotFilter || target == ErrCorrupt }

func corrupt(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{ErrCorrupt, path}, args...)...)
}

// errMovedOn is a reader's read of the directory that the writer overtook:
// not damage, and read again.
var errMovedOn = errors.New("engine: the writer moved on while the directory was read")
