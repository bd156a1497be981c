package mmapfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"github.com/tallybloom/tallybloom/internal/flock"
)

// OpenFunc opens the underlying file; by default os.OpenFile, or on Windows
// its like that lets the open file be renamed. Tests replace it to inject
// faults.
type OpenFunc func(name string, flag int, perm fs.FileMode) (*os.File, error)

// File is an open file whose regions can be mapped.
type File struct {
	file     *os.File
	path     string
	writable bool
	locked   bool
	closed   bool
}

// Open opens path with flag and perm through open (the default when nil).
// Regions of a file opened without os.O_RDWR are mapped read-only.
func Open(path string, flag int, perm fs.FileMode, open OpenFunc) (*File, error) {
	if open == nil {
		open = openFile
	}
	file, err := open(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{file: file, path: path, writable: flag&os.O_RDWR != 0}, nil
}

// Make makes a new file for writing, named prefix and random letters,
// through open (the default when nil) with mode perm, and locks it as Lock
// does, making another where a process cleaning up removed it before its
// lock (see flock.Make). Where files cannot be locked it is left unlocked,
// and Lock says why.
func Make(prefix string, perm fs.FileMode, open OpenFunc) (*File, error) {
	if open == nil {
		open = openFile
	}
	file, locked, err := flock.Make(prefix, func(name string) (*os.File, error) {
		return open(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	})
	if err != nil {
		return nil, err
	}
	return &File{file: file, path: file.Name(), writable: true, locked: locked}, nil
}

// Path is the path the file was opened with.
func (f *File) Path() string { return f.path }

// MoveTo gives the file the name path in place of the name it was opened
// with, and fails with an error that is fs.ErrExist if path exists: a file
// built under a temporary name appears at path whole. It links path to the
// file, then removes the old name; on a file system without hard links it
// renames instead. On Windows, which renames without replacing in one step,
// it renames.
func (f *File) MoveTo(path string) error {
	if done, err := moveNoReplace(f.path, path); done {
		if err == nil {
			f.path = path
		}
		return err
	}
	err := os.Link(f.path, path)
	switch {
	case err == nil:
		_ = os.Remove(f.path) // the file lives on under path
	case errors.Is(err, fs.ErrExist):
		return err
	default:
		if _, statErr := os.Lstat(path); statErr == nil {
			return &fs.PathError{Op: "link", Path: path, Err: fs.ErrExist}
		}
		if err := os.Rename(f.path, path); err != nil {
			return err
		}
	}
	f.path = path
	return nil
}

// MoveOver gives the file the name path in place of the name it was opened
// with, in one rename: whatever path named loses the name.
func (f *File) MoveOver(path string) error {
	if err := os.Rename(f.path, path); err != nil {
		return err
	}
	f.path = path
	return nil
}

// Writable reports whether the file was opened for writing.
func (f *File) Writable() bool { return f.writable }

// Size is the file's current size in bytes.
func (f *File) Size() (int64, error) {
	info, err := f.Info()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// Info describes the open file, whatever name it has now.
func (f *File) Info() (fs.FileInfo, error) { return f.file.Stat() }

// Allocated is the number of bytes the file occupies on disk.
func (f *File) Allocated() (int64, error) { return allocated(f) }

// Reserve makes sure [off, off+n) exists and is allocated on disk, growing the
// file if needed. New bytes read as zero.
func (f *File) Reserve(off, n int64) error {
	if !inFileRange(off, n) {
		return fmt.Errorf("%w: reserve %d bytes at %d", ErrOutOfRange, n, off)
	}
	return reserve(f, off, n)
}

// Release gives the disk blocks of [off, off+n) back where the platform can,
// and leaves the range reading as zeros in any case. The file keeps its size.
func (f *File) Release(off, n int64) error {
	if !inFileRange(off, n) {
		return fmt.Errorf("%w: release %d bytes at %d", ErrOutOfRange, n, off)
	}
	return release(f, off, n)
}

// inFileRange reports whether [off, off+n) can be a range of a file: no
// negative offset or length, and an end that does not wrap around.
func inFileRange(off, n int64) bool { return off >= 0 && n >= 0 && off <= math.MaxInt64-n }

// WriteAt writes b at off, growing the file as needed: for filling room
// from a stream before it is mapped.
func (f *File) WriteAt(b []byte, off int64) error {
	if _, err := f.file.WriteAt(b, off); err != nil {
		return err
	}
	return nil
}

// ReadAt reads len(b) bytes at off, an error if the file ends first: for a
// look at a file's first bytes before anything is mapped.
func (f *File) ReadAt(b []byte, off int64) error {
	_, err := f.file.ReadAt(b, off)
	return err
}

// Lock takes an exclusive lock on the file without waiting: ErrLocked if
// another open file description (in this process or another) holds it. The
// lock goes with Close. A file that holds the lock already (Make's) keeps
// it: Windows would refuse it a second lock of its own.
func (f *File) Lock() error {
	if f.locked {
		return nil
	}
	switch err := flock.Lock(f.file); {
	case errors.Is(err, flock.ErrHeld):
		return ErrLocked
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("%w: file locks on %s", ErrUnsupported, runtime.GOOS)
	case err != nil:
		return err
	}
	f.locked = true
	return nil
}

// LockHolder names the process that holds the file's lock, after Lock
// found it held: its pid and command name, or pid 0 where the system does
// not say (see flock.Holder).
func (f *File) LockHolder() (pid int, name string) { return flock.Holder(f.file) }

// Sync flushes the file's data and metadata (its size) to disk.
func (f *File) Sync() error { return f.file.Sync() }

// Close releases the lock and closes the file. Regions stay mapped until they
// are unmapped; the lock is released explicitly because a mapping keeps the
// open file description, and so an implicit lock, alive. Later calls do
// nothing.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	var err error
	if f.locked {
		err = flock.Unlock(f.file)
		f.locked = false
	}
	return errors.Join(err, f.file.Close())
}

// Region is one mapping of part of the file.
type Region struct {
	mapping []byte // the whole mapping, from its page boundary
	// reserved is the address range the region holds: the mapping, or for
	// a large mapping the reservation around it.
	reserved []byte
	data     []byte
	flush    func() error
	unmap    func() error
	// unmapMu makes Vacate and Unmap safe to call more than once and from
	// several goroutines; it guards vacated and unmapped.
	unmapMu  sync.Mutex
	vacated  bool
	unmapped bool
	writable bool
	path     string // of the file, for errors
}

// Map maps [off, off+n) of the file, read-write if the file is writable, for
// random access (no readahead). The range must lie inside the file. off need
// not be aligned to the system page size; the mapping starts at the
// boundary below it that the system maps from (a page; on Windows the
// allocation granularity, 64 KiB).
func (f *File) Map(off, n int64) (*Region, error) { return f.mapRange(off, n, false) }

// MapLarge is Map with large pages where the platform has them: on Linux
// the mapping is placed so that its 2 MiB-aligned file ranges can be mapped
// by single page-table entries, and the kernel is asked to keep those
// ranges in 2 MiB page-cache pages. Lookups over a large region then rarely
// miss the TLB; the price is that a page written through the mapping is
// written back whole, so syncing a few scattered changes writes 2 MiB each.
// Elsewhere it is Map.
func (f *File) MapLarge(off, n int64) (*Region, error) { return f.mapRange(off, n, true) }

func (f *File) mapRange(off, n int64, large bool) (*Region, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if off < 0 || n <= 0 || off > size || n > size-off || n > maxMapping {
		return nil, fmt.Errorf("%w: %d bytes at %d in a file of %d bytes", ErrOutOfRange, n, off, size)
	}
	boundary := mapBoundary()
	start := off - off%boundary
	var r *Region
	if large {
		r, err = mapLarge(f, start, n+off-start)
	} else {
		r, err = mapPortable(f, start, n+off-start)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: f.path, Err: err}
	}
	// Lookups are random: readahead around a fault would read megabytes
	// for one cache line, and make Open read counters it never asked for.
	adviseRandom(r.mapping)
	r.data = r.mapping[off-start:][:n:n]
	r.writable, r.path = f.writable, f.path
	return r, nil
}

// mapPortable maps length bytes from start, a multiple of mapBoundary,
// with mmap-go.
func mapPortable(f *File, start, length int64) (*Region, error) {
	prot := mmap.RDONLY
	if f.writable {
		prot = mmap.RDWR
	}
	file, release, err := viewFile(f)
	if err != nil {
		return nil, err
	}
	mapping, err := mmap.MapRegion(file, int(length), prot, 0, start)
	if err != nil {
		return nil, errors.Join(err, release())
	}
	unmap := func() error { return errors.Join(mapping.Unmap(), release()) }
	return &Region{mapping: mapping, reserved: mapping, flush: mapping.Flush, unmap: unmap}, nil
}

// LargeBytes is how much of the region the kernel maps with large pages
// (2 MiB entries) right now: non-zero only on Linux, for pages touched
// since they were mapped. A check, not a hot path: it reads
// /proc/self/smaps.
func (r *Region) LargeBytes() (int64, error) {
	return largeBytes(uintptr(unsafe.Pointer(unsafe.SliceData(r.mapping))))
}

// Bytes is the mapped range.
func (r *Region) Bytes() []byte { return r.data }

// Sync writes the region's changed pages to disk and waits for them.
func (r *Region) Sync() error { return r.flush() }

// Populate readies every page of a writable region for writing, in one
// pass: the file's pages are read in (or, where none was ever written,
// zeroed) and mapped writable, as the first store into each would have
// done, one fault at a time. It changes no byte. The pages count as
// written: they stay in memory until written back, and the next Sync
// writes them all. Unmapped or vacated regions, and regions of a file
// opened read-only, get ErrNotWritable; a refusal of the system (no
// memory for the pages, say) is an *fs.PathError.
func (r *Region) Populate() error {
	r.unmapMu.Lock()
	defer r.unmapMu.Unlock()
	if !r.writable || r.vacated || r.unmapped {
		return ErrNotWritable
	}
	if err := populate(r.mapping); err != nil {
		return &fs.PathError{Op: "madvise", Path: r.path, Err: err}
	}
	return nil
}

// touchPages is Populate done by hand: an atomic add of zero to the first
// word of each page, a store that changes nothing, one fault a page, in
// order.
func touchPages(b []byte) {
	page := os.Getpagesize()
	for off := 0; off+8 <= len(b); off += page {
		atomic.AddUint64((*uint64)(unsafe.Pointer(&b[off])), 0)
	}
}

// Unmap releases the mapping; later calls do nothing. Bytes must not be
// used afterwards.
func (r *Region) Unmap() error {
	r.unmapMu.Lock()
	defer r.unmapMu.Unlock()
	if r.unmapped {
		return nil
	}
	r.unmapped = true
	return r.unmap()
}

// Vacate takes the file out of the region but leaves its addresses
// readable, for a region that readers may still be inside. On Unix the
// region's pages (a large mapping's whole reservation) are replaced, in one
// step, by read-only zero pages of no file: a reader reads either the
// file's bytes or zeros, never faults, and the file is no longer mapped, so
// closing it releases it. Unmap then gives the addresses back, once no
// reader can be inside. Elsewhere Vacate is Unmap. The region must not be
// written after Vacate.
func (r *Region) Vacate() error {
	r.unmapMu.Lock()
	defer r.unmapMu.Unlock()
	if r.vacated || r.unmapped {
		return nil
	}
	r.vacated = true
	// The whole reserved range, so that the kernel can merge it with its
	// neighbours into one mapping, as it does plain regions.
	if err := vacate(r.reserved); !errors.Is(err, ErrUnsupported) {
		return err
	}
	r.unmapped = true
	return r.unmap()
}

// maxMapping keeps lengths inside int on 32-bit platforms.
const maxMapping = int64(^uint(0) >> 1)

// zeroRange writes zeros over [off, off+n): the portable way to reserve room
// and to clear released room.
func zeroRange(f *File, off, n int64) error {
	zeros := make([]byte, min(n, 1<<20))
	for n > 0 {
		chunk := min(n, int64(len(zeros)))
		if _, err := f.file.WriteAt(zeros[:chunk], off); err != nil {
			return err
		}
		off += chunk
		n -= chunk
	}
	return nil
}

// growByWriting reserves [off, off+n) by writing zeros over the part beyond
// the current end of the file; bytes already in the file are left as they are.
func growByWriting(f *File, off, n int64) error {
	size, err := f.Size()
	if err != nil {
		return err
	}
	if end := off + n; end > size {
		start := max(off, size)
		return zeroRange(f, start, end-start)
	}
	return nil
}
