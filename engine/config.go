package engine

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/tallybloom/tallybloom/mmapfile"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// Default parameters.
const (
	DefaultTightening = 0.9
	DefaultGrowth     = 2
	DefaultFileMode   = fs.FileMode(0o644)
)

// MaxSubFilters is the most sub-filters a chain retains. An add that needs
// one more gets ErrChainFull until DropBefore retires some: a chain of
// Growth 1 that opens one a day holds 64 days.
const MaxSubFilters = scaling.MaxSubFilters

// Config is the set of parameters persisted in the file at creation. They
// never change for the life of the file.
type Config struct {
	// Capacity is the number of keys the first sub-filter is built for.
	// Required.
	Capacity uint64
	// ErrorRate bounds the false-positive rate of the whole chain, however
	// many sub-filters it grows. Required, 0 < ErrorRate < 1.
	ErrorRate float64
	// Tightening is the ratio between the error rates of successive
	// sub-filters, 0 < Tightening < 1. Zero means DefaultTightening (0.9).
	Tightening float64
	// Growth is the capacity factor between successive sub-filters, at least
	// 1 (1 keeps every sub-filter the same size). Zero means DefaultGrowth (2).
	// Create refuses a Growth or Tightening with which a growing chain's
	// second sub-filter could not be built.
	Growth float64
	// Seed seeds the key hash. Zero means a random seed chosen at creation
	// and stored in the file, so that keys crafted to collide cannot be
	// computed in advance.
	Seed uint64
	// Fixed makes a fixed-size filter: one sub-filter built for the whole
	// ErrorRate at Capacity, never growing. Adds past Capacity are accepted
	// and show as overfilled in Stats; the error rate then rises above
	// ErrorRate. Default false: the chain grows.
	Fixed bool
	// CountersOnly leaves out the presence bits: by default every
	// sub-filter keeps, beside its 4-bit counters, one bit a counter that is
	// set while the counter is non-zero, and lookups read those instead of
	// the counters. They take a quarter of the counters' room more (the file
	// is 1.25 times the size) and cost adds and removes a second cache line;
	// in exchange a lookup reads a quarter of the memory, so a filter larger
	// than the cache answers in about half the time. Set it where memory
	// matters more than lookups. Default false.
	CountersOnly bool
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	if c.Tightening == 0 {
		c.Tightening = DefaultTightening
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	return c
}

// Validate reports every problem with c at once, after defaults are applied.
// Each problem is an ErrInvalidConfig.
func (c Config) Validate() error {
	err := c.withDefaults().params().Validate()
	if err == nil {
		return nil
	}
	var problems []error
	for _, e := range unjoin(err) {
		problems = append(problems, fmt.Errorf("%w: %w", ErrInvalidConfig, e))
	}
	return errors.Join(problems...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// flags are the persisted flag bits of c, in the superblock and the export.
func (c Config) flags() uint32 {
	var flags uint32
	if c.Fixed {
		flags |= flagFixed
	}
	if c.CountersOnly {
		flags |= flagCountersOnly
	}
	return flags
}

// presence reports whether sub-filters keep presence bits.
func (c Config) presence() bool { return !c.CountersOnly }

// firstLevel validates c, with its defaults, as Create does, and plans its
// first sub-filter.
func (c Config) firstLevel() (scaling.Level, error) {
	if err := c.Validate(); err != nil {
		return scaling.Level{}, err
	}
	first, err := c.params().Level(0)
	if err != nil {
		return scaling.Level{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if !c.Fixed {
		// A chain that cannot build its second sub-filter could never grow;
		// say so now rather than at the first add past Capacity.
		if _, err := c.params().Level(1); err != nil {
			return scaling.Level{}, fmt.Errorf("%w: growth %v, tightening %v: the second sub-filter could not be built: %w",
				ErrInvalidConfig, c.Growth, c.Tightening, err)
		}
	}
	return first, nil
}

// Footprint is what a filter's file takes: the header and its sub-filters.
type Footprint struct {
	// FileBytes is the size of the file, all of it reserved on disk: the
	// first sub-filter's room at Create, each later one's when it opens.
	FileBytes uint64
	// SubFilters is how many sub-filters the file holds.
	SubFilters int
	// Capacity is the keys those sub-filters are built for together, and
	// ErrorRate the bound of their false-positive rate together: the sum
	// of the rates they are built for. A growing chain builds its first
	// sub-filter for Config.ErrorRate x (1 - Tightening), and each after
	// it for Tightening times the rate of the one before, so that the
	// whole chain stays under Config.ErrorRate.
	Capacity  uint64
	ErrorRate float64
	// CounterBytes and PresenceBytes are the sub-filters' counters and
	// presence bits (none with CountersOnly).
	CounterBytes, PresenceBytes uint64
}

// FootprintOf says what Create would make of cfg, without making anything:
// for sizing a filter before there is room for it. It refuses what Create
// refuses, with the same errors.
func FootprintOf(cfg Config) (Footprint, error) { return FootprintHolding(cfg, 0) }

// FootprintHolding says what the file of cfg takes once keys adds were
// made into it, with ids that rise and no sub-filter retired: the header
// and the sub-filters a growing chain opens for them, each once the one
// before holds its capacity. A fixed filter keeps its one sub-filter: a
// Capacity below keys says that it is then overfilled. Keys that a chain
// could hold only in more than MaxSubFilters sub-filters, or in one too
// large to build, are ErrChainFull; cfg is refused as Create refuses it.
func FootprintHolding(cfg Config, keys uint64) (Footprint, error) {
	cfg = cfg.withDefaults()
	level, err := cfg.firstLevel()
	if err != nil {
		return Footprint{}, err
	}
	fp := Footprint{FileBytes: HeaderBytes}
	for {
		g := level.Geometry
		fp.SubFilters++
		fp.FileBytes += regionBytes(g, cfg.presence())
		fp.Capacity += level.Capacity
		fp.ErrorRate += level.ErrorRate
		fp.CounterBytes += g.Bytes()
		fp.PresenceBytes += presenceBytes(g, cfg.presence())
		if cfg.Fixed || fp.Capacity >= keys {
			return fp, nil
		}
		if fp.SubFilters == MaxSubFilters {
			return Footprint{}, fmt.Errorf("%w: %d keys need more than the %d sub-filters a chain can hold, which are built for %d",
				ErrChainFull, keys, MaxSubFilters, fp.Capacity)
		}
		if level, err = cfg.params().Level(fp.SubFilters); err != nil {
			return Footprint{}, fmt.Errorf("%w: %d keys need a sub-filter %d, which could not be built: %w", ErrChainFull, keys, fp.SubFilters+1, err)
		}
	}
}

func (c Config) params() scaling.Params {
	return scaling.Params{Capacity: c.Capacity, ErrorRate: c.ErrorRate, Tightening: c.Tightening, Growth: c.Growth, Fixed: c.Fixed}
}

// randomSeed draws a non-zero seed from the operating system.
func randomSeed() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("engine: random seed: %w", err)
		}
		if s := binary.LittleEndian.Uint64(b[:]); s != 0 {
			return s, nil
		}
	}
}

// Options is runtime behaviour: nothing here is persisted. A nil *Options is
// valid and means every default.
type Options struct {
	// ReadOnly opens the filter for reading only: no lock is taken, any
	// number of readers may share the file with one writer, and a reader
	// sees the writer's new sub-filters and adds without reopening. Changes
	// return ErrReadOnly. Default false.
	ReadOnly bool

	// FileMode is the permission of a file made by Create. Default 0644: a
	// reader process needs no write permission.
	FileMode fs.FileMode

	// LargePages maps the counters and presence bits so that the kernel
	// can use 2 MiB pages for them (Linux, with transparent huge pages
	// "madvise" or "always", on a file system with large page-cache pages:
	// ext4 from 6.16, XFS). A lookup in a filter far larger than the cache
	// then costs its cache miss without a TLB miss on top: a page walk the
	// lookup waits for, which costs most where the process's other work
	// between lookups takes the page tables' lines out of the cache
	// (bench/RESULTS.md times lookups side by side with another filter's).
	// The kernel makes a 2 MiB page of a range it brings into the page
	// cache through such a mapping, by a lookup's load as by a change's
	// store, in a writer and in a read-only process alike; a range the page
	// cache already holds in 4 KiB pages, because a process without
	// LargePages read or wrote it since it was last brought in, stays in
	// them while it stays cached. Filter.LargePageBytes says how much of a
	// filter the kernel did map large.
	//
	// The costs: the first touch of an untouched 2 MiB range reads or
	// zeroes all of it (about a millisecond, once), and Flush writes a
	// changed page back whole, so a Flush after a few scattered changes
	// writes up to 2 MiB for each of them where 4 KiB pages write 4 KiB.
	// Worth it for large filters read far more often than flushed, and for
	// large filters changed without pause: Linux writes such a file back
	// on its own every few seconds once it has been dirty for 30 s, and
	// each 4 KiB page written back faults on its next store, where a 2 MiB
	// page faults once for all of its range (docs/PERFORMANCE.md, Flush). The
	// file's format does not change, and processes sharing a file may
	// differ in this setting, but they share its pages: a range a reader
	// with LargePages brought in is written back whole by a writer without
	// it too. Default false.
	LargePages bool

	// Replace lets Create, Import, ImportAs and mirror.Restore put the new
	// file in place of a filter file at the path, where they otherwise
	// fail with ErrExists: how a file a machine crash left unclean, or a
	// damaged one, is made again from an export or a Redis copy. The old
	// file's writer lock is taken first and held until the new file has
	// its name, so a writer that has the old file open makes it fail with
	// ErrLocked, and none can open the old file meanwhile; processes that
	// read the old file keep reading it, as after any rename. (Windows
	// renames over no open file: there a reader that has the old file open
	// makes it fail with ErrLocked too.) Only a regular file that starts
	// as a filter file does is replaced (ErrNotFilter otherwise), and a
	// failure leaves it as it was. Default false.
	Replace bool

	// FlushWhenIdle, if positive, makes a writer flush itself once no
	// change has been committed for that long: it looks every
	// FlushWhenIdle, and flushes when the memory sequence has not moved for
	// a whole FlushWhenIdle and changes are not yet on disk, so between one
	// and two FlushWhenIdle after the last change. A machine that crashes
	// while the filter is idle then leaves it clean, and Open is at once
	// ready, where a crash after any change since the last Flush gives
	// ErrUnclean. A flush that fails is tried again at each look, and
	// Stats.FlushError says why meanwhile. A goroutine looks until Close,
	// holding the writer's mutex for a moment each time: changes that
	// keep coming pay next to nothing for it. The change that ends a pause
	// pays what the first change after any Flush does: it syncs the dirty
	// mark first, and each page the flush wrote faults once on its next
	// store; and a change that comes while the flush writes waits for it,
	// as for any Flush (lookups do not). A reader ignores it. Default 0:
	// only Flush and Close flush.
	FlushWhenIdle time.Duration

	// PopulateNewSubFilters readies each sub-filter the chain opens for
	// adds, as Filter.Populate readies the newest, in the background as
	// soon as the change that opened it has committed: the adds that
	// follow then do not fault its pages in one at a time at their first
	// stores (two faults a page, each of several µs: docs/PERFORMANCE.md,
	// New filters). For a writer whose chain grows as its adds go on,
	// where the first seconds of each new sub-filter's adds would
	// otherwise pay for those faults. The costs are Populate's: the new
	// sub-filter's whole room comes into memory at once, and is written
	// back whole; Close, and a DropBefore that retires sub-filters, wait
	// for a populate in progress. The sub-filters a filter has when
	// Create, Import or Open returns are not populated (call Populate for
	// the newest). A populate the system refuses (no memory for the pages)
	// leaves the adds to fault the pages in; it is not an error of any
	// call. A reader ignores it. Default false.
	PopulateNewSubFilters bool

	// OpenFile opens the file. Default os.OpenFile (on Windows, its like
	// that lets the open file be renamed, see mmapfile.OpenFunc). Tests
	// replace it to inject faults.
	OpenFile mmapfile.OpenFunc

	// BootID names the current boot, to tell a process crash (recovered
	// exactly) from a machine crash (ErrUnclean). Default
	// seqno.CurrentBootID: the kernel's boot id on Linux, the boot session
	// UUID on macOS, the kernel's boot time on the BSDs; elsewhere there is
	// none, and a file left dirty always counts as a machine crash.
	BootID func() (seqno.BootID, error)
}

// settings are Options with every default applied and the boot id read.
type settings struct {
	Options
	boot      seqno.BootID
	bootKnown bool
}

// withDefaults resolves o: every zero field set to its default, the boot id
// read once.
func (o *Options) withDefaults() settings {
	var r settings
	if o != nil {
		r.Options = *o
	}
	if r.FileMode == 0 {
		r.FileMode = DefaultFileMode
	}
	if r.BootID == nil {
		r.BootID = seqno.CurrentBootID
	}
	boot, err := r.BootID()
	r.boot, r.bootKnown = boot, err == nil
	return r
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	var problems []error
	if o.FileMode&^fs.ModePerm != 0 {
		problems = append(problems, fmt.Errorf("%w: file mode %v has more than permission bits", ErrInvalidConfig, o.FileMode))
	}
	if o.FlushWhenIdle < 0 {
		problems = append(problems, fmt.Errorf("%w: FlushWhenIdle %v is negative", ErrInvalidConfig, o.FlushWhenIdle))
	}
	return errors.Join(problems...)
}
