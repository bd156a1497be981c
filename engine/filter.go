package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/internal/dirsync"
	"github.com/tallybloom/tallybloom/internal/flock"
	"github.com/tallybloom/tallybloom/mmapfile"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// Filter is a scalable counting Bloom filter kept in a memory-mapped file.
type Filter struct {
	path       string
	config     Config
	hasher     counting.Hasher
	readOnly   bool
	largePages bool
	// populateNew: Options.PopulateNewSubFilters, in a writer, once
	// Create, Import or Open has built or opened the chain; populating
	// counts the populates it started that have not ended.
	populateNew bool
	populating  sync.WaitGroup
	recovered   bool
	boot        seqno.BootID

	file    *mmapfile.File
	header  *mmapfile.Region
	page0   []byte // the first page of the header mapping
	journal *seqno.Journal
	dirSeq  *uint64 // in page 0: generation of the newest directory announced
	chain   *scaling.Chain

	// unjournaled turns the undo record and sequence bump off; only
	// benchmarks set it, to measure what the bookkeeping costs.
	unjournaled bool
	// crash stops a change at a crash point in tests built with invariant
	// checks; elsewhere it is empty.
	crash crashHook
	// quietTries, when set by a test, bounds a read-only Snapshot's attempts
	// in place of quietAttempts.
	quietTries int

	closed atomic.Bool
	// seenDirSeq is the directory generation this process last loaded; a
	// reader reloads when the file's differs.
	seenDirSeq atomic.Uint64
	// early is, for a reader, a directory sequence its last reload found
	// announced ahead of the memory sequence, and that sequence (see
	// announcedEarly); dirSeq 0 is none. reloads counts reloads, for tests.
	early struct {
		dirSeq, memSeq atomic.Uint64
	}
	reloads atomic.Uint64

	// mu serializes changes, Flush, Close and a reader's reload.
	mu struct {
		sync.Mutex
		dirty      bool   // the state on disk says dirty
		marks      int    // dirty marks synced (beginLocked), for tests
		durableSeq uint64 // the state's durable sequence
		liveSlot   int    // the directory slot that is live
		change     change // the change in flight
		// retired are mappings of sub-filters that left the chain, unmapped
		// once unreachable, and vacated at Close if they are still mapped.
		retired []*mmapfile.Region
		// feed is the change feed's subscribers (OnCommit); event and
		// eventTallies are reused for every change.
		feed         []*subscriber
		event        Change
		eventTallies Tallies
		// closedStats is the filter's Stats when it closed, what Stats
		// reports after Close, when nothing it reads is mapped.
		closedStats Stats
		// flushErr is what the latest flush returned (Stats.FlushError).
		flushErr error
	}
	// idleStop, closed by Close, ends flushWhenIdle; nil without
	// Options.FlushWhenIdle.
	idleStop chan struct{}
	// state is the file's state and its spare copy, in page 0. It is
	// written at a flush and at the first change after one, so it comes
	// last, where it moves none of the fields every change reads.
	state *seqno.StateArea
}

// change is what the change in flight did besides counter writes.
type change struct {
	sealed    bool                           // an undo record is sealed
	published bool                           // a directory was written to the other slot
	marked    bool                           // its beginLocked marked the file dirty
	dropped   []*scaling.SubFilter           // sub-filters to give back after the commit
	allocated []*space                       // room taken by this change, not yet in the chain
	touched   [counting.MaxFlatK]touchedSpan // counters it writes, for the change feed
	touchedN  int
}

// reset makes c the empty change again. It clears only what the change
// used: copying or zeroing the whole record, mostly the touched array, took
// an add in the cache 1 to 2%.
func (c *change) reset() {
	clear(c.touched[:c.touchedN])
	c.touchedN = 0
	c.sealed, c.published, c.marked = false, false, false
	c.dropped, c.allocated = nil, nil
}

// Create makes a new filter file at path. It fails with ErrExists if path
// exists, unless Options.Replace lets it replace a filter file. The file
// starts at sequence 1 (its creation), flushed, and appears at path only
// once whole (see Import).
func Create(path string, cfg Config, opts *Options) (*Filter, error) {
	cfg = cfg.withDefaults()
	if _, err := cfg.firstLevel(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		seed, err := randomSeed()
		if err != nil {
			return nil, err
		}
		cfg.Seed = seed
	}
	return createFile(path, cfg, opts, func(f *Filter) error {
		f.journal.Reset(0)
		chain, err := scaling.New(cfg.params(), store{f})
		f.chain = chain
		return err
	})
}

// createFile makes a new file at path for cfg, and runs build as its first
// change: build sets the chain up and publishes its directory. The file is
// built under a name of its own beside path (see buildingPrefix) and takes
// the name path only once whole and flushed, so a process killed while it
// creates or imports a filter leaves nothing at path. On any failure the
// file is removed.
func createFile(path string, cfg Config, opts *Options, build func(*Filter) error) (*Filter, error) {
	if err := errors.Join(opts.Validate(), checkHost()); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if path == "" {
		// Refused here: the file would be built in the working directory
		// and only its rename to "" would fail.
		return nil, fmt.Errorf("%w: an empty path", ErrInvalidInput)
	}
	replaced, err := claimPath(path, o)
	if err != nil {
		return nil, err
	}
	if replaced != nil {
		defer replaced.Close() // its lock, once the new file has the name
	}
	// Files that processes killed while making one for path left behind
	// are unlocked; one another process is still making is locked, and
	// stays.
	flock.RemoveUnlocked(buildingPrefix(path))
	file, err := mmapfile.Make(buildingPrefix(path), o.FileMode, o.OpenFile)
	switch pathErr := (*fs.PathError)(nil); {
	case errors.As(err, &pathErr):
		// Name the path the caller gave, not the one built beside it.
		return nil, &fs.PathError{Op: "create", Path: path, Err: pathErr.Err}
	case errors.Is(err, flock.ErrTaken):
		return nil, fmt.Errorf("%w: %s: %w", ErrLocked, path, err)
	case err != nil:
		return nil, err
	}
	building := file.Path()
	f, err := create(file, path, cfg, o, build)
	switch {
	case err == nil && replaced != nil:
		err = moveOver(file, path, replaced)
	case err == nil:
		if err = file.MoveTo(path); errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%w: %s", ErrExists, path)
		}
	}
	if err != nil {
		if f != nil {
			f.unmapAll()
		}
		_ = file.Close()
		_ = os.Remove(building)
		return nil, err
	}
	f.populateNew = o.PopulateNewSubFilters && !f.readOnly
	f.startFlushingWhenIdle(o.FlushWhenIdle)
	return f, dirsync.Of(path)
}

// claimPath checks that a new file may take the name path: nothing has it,
// or, with Options.Replace, a filter file does, whose writer lock it takes
// and returns, to be closed once the new file has the name.
func claimPath(path string, o settings) (*mmapfile.File, error) {
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil, nil
	case !o.Replace:
		return nil, fmt.Errorf("%w: %s", ErrExists, path)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%w: will not replace %s, which is not a regular file", ErrNotFilter, path)
	}
	old, err := mmapfile.Open(path, os.O_RDONLY, 0, o.OpenFile)
	if err != nil {
		return nil, err
	}
	if err = startsAsFilter(old); err == nil {
		err = lock(old)
	}
	if err != nil {
		_ = old.Close()
		return nil, err
	}
	return old, nil
}

// moveOver renames the new file over path, whose old file's lock replaced
// holds. Where the system renames over no open file (Windows), the lock's
// handle goes first, and the system itself then refuses the rename while
// any process has the old file, as the lock refuses another writer
// elsewhere.
func moveOver(file *mmapfile.File, path string, replaced *mmapfile.File) error {
	if mmapfile.ReplacesOpenFiles {
		return file.MoveOver(path)
	}
	_ = replaced.Close()
	err := file.MoveOver(path)
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: %s: a process has it open or mapped, a reader too, and %s replaces no such file: %w", ErrLocked, path, runtime.GOOS, err)
	}
	return err
}

// startsAsFilter refuses a file that does not begin with Magic. It reads
// the file claimPath opened, the one whose lock it takes, not the path
// again.
func startsAsFilter(file *mmapfile.File) error {
	head := make([]byte, len(Magic))
	if err := file.ReadAt(head, 0); err != nil || string(head) != Magic {
		return fmt.Errorf("%w: will not replace %s, which is not a filter file", ErrNotFilter, file.Path())
	}
	return nil
}

// buildingPrefix starts the name of a file being made for path, in path's
// directory: a dot, path's name, ".creating-", then random letters.
func buildingPrefix(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".creating-")
}

func create(file *mmapfile.File, path string, cfg Config, o settings, build func(*Filter) error) (*Filter, error) {
	if err := lock(file); err != nil {
		return nil, err
	}
	if err := file.Reserve(0, HeaderBytes); err != nil {
		return nil, err
	}
	f, err := newFilter(file, o)
	if err != nil {
		return nil, err
	}
	f.path = path // the name it will have; errors name it
	f.config = cfg
	f.hasher = counting.NewHasher(cfg.Seed)
	encodeSuperblock(f.page0[offSuperblock:], cfg)
	f.state.Store(seqno.State{})

	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.beginLocked(); err != nil {
		return f, err
	}
	if err := build(f); err != nil {
		f.abortLocked()
		return f, err
	}
	if err := f.commitLocked(); err != nil {
		return f, err
	}
	return f, f.flushLocked()
}

// Open opens the filter file at path. Its cost does not depend on the size of
// the filter: it maps the file and reads the header, never the counters.
//
// If the process that last wrote the file was killed mid-change, Open (for
// writing) undoes the change in flight and Recovered reports it. If the
// machine crashed after changes that were not flushed, Open returns an
// *UncleanError (errors.Is ErrUnclean) carrying the last durable sequence.
// A path that names a directory, a named pipe or anything else but a file
// gets ErrInvalidInput, without being opened.
func Open(path string, opts *Options) (*Filter, error) {
	if err := errors.Join(opts.Validate(), checkHost()); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := regularFile(path); err != nil {
		return nil, err
	}
	flag := os.O_RDWR
	if o.ReadOnly {
		flag = os.O_RDONLY
	}
	file, err := mmapfile.Open(path, flag, 0, o.OpenFile)
	if err != nil {
		return nil, err
	}
	f, err := open(file, o)
	for attempt := 1; errors.Is(err, errMovedOn); attempt++ {
		if attempt == stateAttempts {
			err = fmt.Errorf("%w: %s: its writer changed the directory during each of %d attempts to read it", ErrBusy, path, attempt)
			break
		}
		time.Sleep(statePause)
		f, err = open(file, o)
	}
	if err != nil {
		_ = file.Close()
		return nil, err
	}
	f.populateNew = o.PopulateNewSubFilters && !f.readOnly
	f.startFlushingWhenIdle(o.FlushWhenIdle)
	return f, nil
}

// regularFile refuses a path that names something other than a file: a
// directory would otherwise read as a filter cut short, and opening a named
// pipe would wait for a writer that may never come. A path that does not
// exist is left to the open, which says so.
func regularFile(path string) error {
	info, err := os.Stat(path)
	if err != nil || info.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch mode := info.Mode(); {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%w: %s is %s, not a filter file", ErrInvalidInput, path, what)
}

func open(file *mmapfile.File, o settings) (*Filter, error) {
	path := file.Path()
	if !o.ReadOnly {
		if err := lock(file); err != nil {
			return nil, err
		}
	}
	size, err := file.Size()
	if err != nil {
		return nil, err
	}
	if size < HeaderBytes {
		return nil, shortFile(file, size)
	}
	f, err := newFilter(file, o)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.unmapAll()
		}
	}()
	if f.config, err = decodeSuperblock(path, f.page0); err != nil {
		return nil, err
	}
	f.hasher = counting.NewHasher(f.config.Seed)
	state, spare, err := f.readState()
	if err != nil {
		return nil, corrupt(path, "%v", err)
	}
	outcome := state.Outcome(f.boot, o.bootKnown)
	if outcome == seqno.MachineCrash {
		return nil, &UncleanError{Path: path, DurableSeq: state.DurableSeq, Config: f.config}
	}
	memSeq := f.journal.MemSeq()
	if outcome == seqno.Clean && memSeq != state.DurableSeq && !f.wentDirty() {
		return nil, corrupt(path, "clean file at sequence %d claims durable sequence %d", memSeq, state.DurableSeq)
	}
	f.mu.dirty, f.mu.durableSeq = state.Dirty, state.DurableSeq

	// The size after the sequence: a writer grows the file before it
	// writes a directory naming the room (see liveDirectory).
	if size, err = file.Size(); err != nil {
		return nil, err
	}
	dir, slot, err := f.directoryAt(memSeq, size)
	if err != nil {
		return nil, err
	}
	subs, err := f.attach(dir.entries, nil)
	if err != nil {
		return nil, err
	}
	if f.chain, err = scaling.Restore(f.config.params(), store{f}, subs); err != nil {
		return nil, corrupt(path, "%v", err)
	}
	f.mu.liveSlot = slot
	f.seenDirSeq.Store(dir.generation)
	if !o.ReadOnly {
		if spare {
			// A writer was killed while it rewrote the state: make both
			// copies whole again.
			f.state.Store(state)
			if err := f.header.Sync(); err != nil {
				return nil, err
			}
		}
		if outcome == seqno.ProcessCrash {
			if err := f.recover(uint64(size)); err != nil {
				return nil, err
			}
		} else if _, pending, _ := f.journal.Pending(); pending {
			return nil, corrupt(path, "clean file with a change in flight")
		}
		f.forgetUncommittedDirectory(1-slot, memSeq)
		atomic.StoreUint64(f.dirSeq, dir.generation)
	}
	ok = true
	return f, nil
}

// wentDirty reports that the state now says dirty: for a reader whose
// writer, between the reader's reads of the state and of the sequence,
// marked the file dirty and committed a change. A writer holds the lock, and
// a clean state that disagrees with the sequence is damage.
func (f *Filter) wentDirty() bool {
	state, _, err := f.readState()
	return f.readOnly && err == nil && state.Dirty
}

// stateAttempts and statePause bound how long a reader reads the state
// again while it does not decode: about 20 ms.
const (
	stateAttempts = 200
	statePause    = 100 * time.Microsecond
)

// readState loads the state; spare reports that it came from the spare
// copy (see seqno.StateArea). A writer rewrites both copies when it marks
// the file dirty and when it flushes, so a reader in another process that
// reads the state while one Store ends and the next begins may find
// neither copy whole: while a writer holds the file, a reader reads them
// again for a while before calling them damage.
func (f *Filter) readState() (state seqno.State, spare bool, err error) {
	for attempt := 1; ; attempt++ {
		state, spare, err = f.state.Load()
		if err == nil || !f.readOnly || attempt == stateAttempts {
			return state, spare, err
		}
		if running, _ := writer(f.path, false); !running {
			return state, spare, err
		}
		time.Sleep(statePause)
	}
}

// shortFile explains a file smaller than the header: not ours when its
// first bytes are not the magic number (as much of it as the file holds),
// else a filter cut short.
func shortFile(file *mmapfile.File, size int64) error {
	if size > 0 {
		if r, err := file.Map(0, size); err == nil {
			defer r.Unmap()
			head := r.Bytes()[:min(size, int64(len(Magic)))]
			if !strings.HasPrefix(Magic, string(head)) {
				return &notFilterError{path: file.Path()}
			}
		}
	}
	return corrupt(file.Path(), "truncated: %d bytes, the header alone takes %d", size, HeaderBytes)
}

// newFilter maps the header of file.
func newFilter(file *mmapfile.File, o settings) (*Filter, error) {
	header, err := mapFreeing(func() (*mmapfile.Region, error) { return file.Map(0, HeaderBytes) })
	if err != nil {
		return nil, err
	}
	page0 := header.Bytes()[:PageSize]
	journal, err := seqno.NewJournal(page0[offJournal:])
	if err != nil {
		_ = header.Unmap()
		return nil, err
	}
	state, err := seqno.NewStateArea(page0[offState:])
	if err != nil {
		_ = header.Unmap()
		return nil, err
	}
	return &Filter{
		path:       file.Path(),
		readOnly:   o.ReadOnly,
		largePages: o.LargePages,
		boot:       o.boot,
		file:       file,
		header:     header,
		page0:      page0,
		journal:    journal,
		state:      state,
		dirSeq:     (*uint64)(unsafe.Pointer(&page0[offDirSeq])),
	}, nil
}

// liveDirectory picks the valid directory slot with the highest generation
// not above memSeq: a slot written by a change not committed at memSeq is
// ignored, whatever it holds, before it is decoded (a reader may find one
// half written, or naming room past fileSize, while the writer grows the
// file). memSeq must be read before fileSize: then every slot it admits was
// written after the file grew for it.
func (f *Filter) liveDirectory(memSeq uint64, fileSize int64) (directory, int, error) {
	best, bestSlot, found := directory{}, 0, false
	for slot := range 2 {
		if slotGeneration(f.directorySlot(slot)) > memSeq {
			continue
		}
		d, valid, err := decodeDirectory(f.directorySlot(slot), fileSize, f.config.presence())
		if err != nil {
			return directory{}, 0, corrupt(f.path, "directory slot %d: %v", slot, err)
		}
		if valid && d.generation <= memSeq && (!found || d.generation > best.generation) {
			best, bestSlot, found = d, slot, true
		}
	}
	if !found || len(best.entries) == 0 {
		return directory{}, 0, corrupt(f.path, "no valid directory at sequence %d", memSeq)
	}
	return best, bestSlot, nil
}

// directoryAt is liveDirectory for a process that read memSeq before the
// slots. It returns errMovedOn if neither slot holds the directory live at
// memSeq and the writer has committed since: two changes that each wrote a
// directory came between the two reads, which a reader reads again rather
// than calling the file damaged. A writer's sequence does not move under it.
func (f *Filter) directoryAt(memSeq uint64, fileSize int64) (directory, int, error) {
	dir, slot, err := f.liveDirectory(memSeq, fileSize)
	if err != nil && f.journal.MemSeq() != memSeq {
		return directory{}, 0, errMovedOn
	}
	return dir, slot, err
}

// forgetUncommittedDirectory clears the slot if a change that never
// committed wrote it: its generation is then above memSeq, the sequence that
// change would have taken. The next change takes that sequence; if it writes
// no directory, the slot would otherwise read as live from then on, and the
// next Open would bring back the sub-filters it retired or the one it opened.
func (f *Filter) forgetUncommittedDirectory(slot int, memSeq uint64) {
	if b := f.directorySlot(slot); slotGeneration(b) > memSeq {
		clear(b)
	}
}

// slotGeneration is the generation a directory slot claims, checked or not.
func slotGeneration(b []byte) uint64 { return binary.LittleEndian.Uint64(b[dirGeneration:]) }

// directorySlot is the page of directory slot 0 or 1.
func (f *Filter) directorySlot(slot int) []byte {
	return f.header.Bytes()[offDirectory+slot*PageSize:][:PageSize]
}

// attach maps and attaches the sub-filters of entries, reusing those of
// current whose entry is unchanged.
func (f *Filter) attach(entries []dirEntry, current []*scaling.SubFilter) ([]*scaling.SubFilter, error) {
	subs := make([]*scaling.SubFilter, 0, len(entries))
	fail := func(err error) ([]*scaling.SubFilter, error) {
		for _, sub := range subs {
			if !containsSub(current, sub) {
				_ = spaceOf(sub).region.Unmap()
			}
		}
		return nil, err
	}
	for _, e := range entries {
		if sub := findSub(current, e); sub != nil {
			subs = append(subs, sub)
			continue
		}
		sp, err := f.mapSpace(e.Level, e.Geometry, e.Offset)
		switch {
		case errors.Is(err, mmapfile.ErrOutOfRange):
			return fail(corrupt(f.path, "sub-filter at level %d: %v", e.Level, err))
		case err != nil:
			// The system refused the mapping (address space, a limit):
			// the file may be sound.
			return fail(fmt.Errorf("map the sub-filter at level %d: %w", e.Level, err))
		}
		sub, err := scaling.Attach(e.Entry, sp)
		if err != nil {
			_ = sp.region.Unmap()
			return fail(corrupt(f.path, "sub-filter at level %d: %v", e.Level, err))
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func findSub(subs []*scaling.SubFilter, e dirEntry) *scaling.SubFilter {
	for _, sub := range subs {
		if sub.Entry == e.Entry && spaceOf(sub).offset == e.Offset {
			return sub
		}
	}
	return nil
}

func containsSub(subs []*scaling.SubFilter, s *scaling.SubFilter) bool {
	for _, sub := range subs {
		if sub == s {
			return true
		}
	}
	return false
}

// recover undoes the change a killed process left in flight, then gives back
// room no sub-filter uses (a retirement whose release never ran).
func (f *Filter) recover(fileSize uint64) error {
	spans, pending, err := f.journal.Pending()
	if err != nil {
		return corrupt(f.path, "%v", err)
	}
	if pending {
		for _, span := range spans {
			if err := f.restoreSpan(span); err != nil {
				return err
			}
		}
		f.recovered = true
	}
	f.journal.Reset(f.journal.MemSeq())
	var live []*space
	for _, sub := range f.chain.SubFilters() {
		live = append(live, spaceOf(sub))
	}
	for _, gap := range gaps(live, fileSize) {
		if err := f.file.Release(int64(gap[0]), int64(gap[1]-gap[0])); err != nil {
			return err
		}
	}
	return nil
}

// restoreSpan writes a span's prior bytes back and, for counters, computes
// the presence bits of their blocks again.
func (f *Filter) restoreSpan(span seqno.Span) error {
	target, restored := f.page0, (*scaling.SubFilter)(nil)
	if span.Area != areaPage0 {
		for _, sub := range f.chain.SubFilters() {
			if areaOfLevel(sub.Level) == span.Area {
				target, restored = spaceOf(sub).counters, sub
			}
		}
		if restored == nil {
			return nil // room of a sub-filter whose opening was undone
		}
	}
	if span.Offset > uint64(len(target)) || uint64(len(span.Prior)) > uint64(len(target))-span.Offset {
		return corrupt(f.path, "undo span of %d bytes at %d outside area %d", len(span.Prior), span.Offset, span.Area)
	}
	copy(target[span.Offset:], span.Prior)
	if restored != nil {
		restored.Filter().RebuildPresenceOf(span.Offset, uint64(len(span.Prior)))
	}
	return nil
}

func lock(file *mmapfile.File) error {
	err := file.Lock()
	switch {
	case errors.Is(err, mmapfile.ErrLocked):
		return fmt.Errorf("%w: %s%s", ErrLocked, file.Path(), lockHolder(file))
	case errors.Is(err, mmapfile.ErrUnsupported):
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return err
}

// lockHolder says who holds file's lock, where the system tells: most
// often another process, and now and then another Filter of this one (a
// service that opened its file twice).
func lockHolder(file *mmapfile.File) string {
	pid, name := file.LockHolder()
	switch {
	case pid == 0:
		return ""
	case pid == os.Getpid():
		return fmt.Sprintf(" (this process, pid %d, holds it: another Filter of the file is open)", pid)
	case name == "":
		return fmt.Sprintf(" (process %d holds it)", pid)
	}
	return fmt.Sprintf(" (process %d, %s, holds it)", pid, name)
}

// checkHost refuses big-endian machines: counter words and tallies are
// little-endian in the file and are used in place.
func checkHost() error {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return fmt.Errorf("%w: big-endian hosts", ErrUnsupported)
	}
	return nil
}
