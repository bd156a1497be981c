package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/mmapfile"
	"github.com/tallybloom/tallybloom/scaling"
)

// space is one sub-filter's room in the file.
type space struct {
	region   *mmapfile.Region
	offset   uint64 // of the counters in the file, page-aligned
	size     uint64 // room taken in the file: the region rounded up to pages
	counters []byte
	presence []byte // empty if the filter keeps counters only
	tallies  []byte
}

func (s *space) Counters() []byte { return s.counters }
func (s *space) Presence() []byte { return s.presence }
func (s *space) Tallies() []byte  { return s.tallies }

func spaceOf(sub *scaling.SubFilter) *space { return sub.Space().(*space) }

// mapSpace maps the room of a sub-filter of geometry g at offset.
func (f *Filter) mapSpace(level int, g counting.Geometry, offset uint64) (*space, error) {
	size := f.regionBytes(g)
	mapRegion := f.file.Map
	if f.largePages {
		mapRegion = f.file.MapLarge
	}
	region, err := mapFreeing(func() (*mmapfile.Region, error) { return mapRegion(int64(offset), int64(size)) })
	if err != nil {
		return nil, err
	}
	return &space{
		region:   region,
		offset:   offset,
		size:     size,
		counters: region.Bytes()[:g.Bytes()],
		presence: region.Bytes()[g.Bytes():][:presenceBytes(g, f.config.presence())],
		tallies:  f.page0[talliesOffset(level):][:scaling.MetaSize],
	}, nil
}

// regionBytes is the room a sub-filter of g takes in this filter's file.
func (f *Filter) regionBytes(g counting.Geometry) uint64 {
	return regionBytes(g, f.config.presence())
}

// unmapLaterLocked unmaps the room of a sub-filter that left the chain once
// no reader can reach it: a Contains that loaded an older snapshot keeps the
// sub-filter, and so the mapping, alive until it returns. Close vacates
// what is still mapped then (vacateAll).
func (f *Filter) unmapLaterLocked(sub *scaling.SubFilter) {
	region := spaceOf(sub).region
	holdUntilUnreachable(sub, region)
	f.mu.retired = append(f.mu.retired, region)
}

// held counts the regions, of every filter in the process, that are kept
// mapped until the garbage collector finds their owner unreachable: those
// of sub-filters out of the chain and of closed filters.
var held atomic.Int64

// holdUntilUnreachable unmaps region once owner is unreachable.
func holdUntilUnreachable[T any](owner *T, region *mmapfile.Region) {
	held.Add(1)
	runtime.AddCleanup(owner, unmapRegion, region)
}

// unmapRegion is the cleanup that unmaps a region no reader can reach.
func unmapRegion(r *mmapfile.Region) {
	_ = r.Unmap()
	held.Add(-1)
}

// mapFreeing maps a region with mapIt. If the system refuses it for want of
// address space (ENOMEM) while held regions still take theirs, it has them
// collected and tries once more: a process whose collector seldom runs (a
// large heap that barely grows) and that opens and closes a large filter
// again and again would otherwise run out of address space, each closed
// filter keeping its mappings' addresses until a collection.
func mapFreeing(mapIt func() (*mmapfile.Region, error)) (*mmapfile.Region, error) {
	region, err := mapIt()
	if err == nil || !errors.Is(err, syscall.ENOMEM) || held.Load() == 0 {
		return region, err
	}
	collectHeld()
	return mapIt()
}

// collectHeld runs the garbage collector and waits, a second at most, for
// the cleanups it queued to unmap what they can: until the held count has
// fallen and then stayed still for a few milliseconds.
func collectHeld() {
	before := held.Load()
	runtime.GC()
	last, still := before, 0
	for deadline := time.Now().Add(time.Second); last > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		if now := held.Load(); now < last {
			last, still = now, 0
		} else if still++; last < before && still >= 5 {
			return
		}
	}
}

var _ scaling.Storage = store{}

// store is the chain's storage: room in the file, the directory slots and
// the undo record. The chain calls it with Filter.mu held.
type store struct{ f *Filter }

// Allocate reserves room at the first gap between retained sub-filters that
// fits, else at the end. Room reused from a retired sub-filter is released
// again first, so it reads as zeros whatever happened to it before.
func (s store) Allocate(level int, g counting.Geometry) (scaling.Space, error) {
	f := s.f
	size := f.regionBytes(g)
	offset := f.freeOffset(size)
	fileSize, err := f.file.Size()
	if err != nil {
		return nil, err
	}
	if int64(offset) < fileSize {
		if err := f.file.Release(int64(offset), int64(min(size, uint64(fileSize)-offset))); err != nil {
			return nil, err
		}
	}
	return f.reserveSpace(level, g, offset)
}

// reserveSpace reserves and maps room for a sub-filter at offset, as room
// taken by the change in flight.
func (f *Filter) reserveSpace(level int, g counting.Geometry, offset uint64) (*space, error) {
	size := f.regionBytes(g)
	if err := f.file.Reserve(int64(offset), int64(size)); err != nil {
		return nil, fmt.Errorf("engine: room for a sub-filter of %d bytes: %w", size, err)
	}
	sp, err := f.mapSpace(level, g, offset)
	if err != nil {
		return nil, err
	}
	f.mu.change.allocated = append(f.mu.change.allocated, sp)
	return sp, nil
}

// Publish writes the directory to the slot that is not live, with the
// sequence of the change in flight as its generation.
func (s store) Publish(subs []*scaling.SubFilter) {
	f := s.f
	d := directory{generation: f.journal.MemSeq() + 1, entries: make([]dirEntry, len(subs))}
	for i, sub := range subs {
		d.entries[i] = dirEntry{Entry: sub.Entry, Offset: spaceOf(sub).offset}
	}
	slot := 1 - f.mu.liveSlot
	encodeDirectory(f.directorySlot(slot), d)
	f.mu.change.published = true
	crashPoint(f, siteDirectoryWritten)
}

// Touch saves the counters and the tallies a change will write, then seals
// the undo record: from here on the change may write. The presence bits it
// writes are not saved: they follow from the counters, and recovery
// computes them again for the blocks it restores.
func (s store) Touch(sub *scaling.SubFilter, p *counting.Probe) {
	f := s.f
	if len(f.mu.feed) > 0 {
		p.Spans(func(offset uint64, length int) { f.touchedLocked(sub, offset, length) })
	}
	if f.unjournaled {
		return
	}
	sp := spaceOf(sub)
	area := areaOfLevel(sub.Level)
	f.journal.Begin()
	p.Spans(func(offset uint64, length int) {
		f.journal.Save(area, offset, sp.counters[offset:][:length])
	})
	f.journal.Save(areaPage0, uint64(talliesOffset(sub.Level)), sp.tallies)
	f.journal.Seal()
	f.mu.change.sealed = true
	crashPoint(f, siteSealed)
}

// Undo areas: page 0 of the header, or the counters of the sub-filter at a
// level.
const areaPage0 = 0

func areaOfLevel(level int) uint32 { return uint32(level) + 1 }

// freeOffset is the lowest page-aligned offset past the header where size
// bytes fit between the retained sub-filters and the room the change in
// flight already took.
func (f *Filter) freeOffset(size uint64) uint64 {
	var used []*space
	if f.chain != nil {
		for _, sub := range f.chain.SubFilters() {
			used = append(used, spaceOf(sub))
		}
	}
	free := gaps(append(used, f.mu.change.allocated...), math.MaxUint64)
	for _, gap := range free {
		if gap[1]-gap[0] >= size {
			return gap[0]
		}
	}
	return free[len(free)-1][0] // the last gap runs to the end of the address space
}

// gaps are the ranges of [HeaderBytes, end) that none of spaces uses,
// lowest first.
func gaps(spaces []*space, end uint64) [][2]uint64 {
	used := make([][2]uint64, 0, len(spaces)+1)
	for _, sp := range spaces {
		used = append(used, [2]uint64{sp.offset, sp.offset + sp.size})
	}
	slices.SortFunc(used, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var free [][2]uint64
	at := uint64(HeaderBytes)
	for _, r := range append(used, [2]uint64{end, end}) {
		if r[0] > at {
			free = append(free, [2]uint64{at, r[0]})
		}
		at = max(at, r[1])
	}
	return free
}
