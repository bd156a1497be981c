package counting

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// MaxSetFilters is the most filters a Set holds: one bit each of a uint64.
const MaxSetFilters = 64

// Set is a list of filters laid out for asking one key of all of them at
// once: what placing a key in each filter needs sits in one array, so that a
// lookup loads every filter's block in a few instructions a filter and the
// cache misses of all of them are under way together.
//
// A Set reads the filters' counters while they are in use; it must not
// outlive their regions.
type Set struct {
	places []place
}

// place is one filter's part of a Set.
type place struct {
	// bits is what lookups read: the filter's presence bits, or its
	// counters if it keeps none; stride is their bytes per block.
	bits      unsafe.Pointer
	stride    uint64
	presence  bool
	blocks    uint64
	blockSalt uint64
	slotSalt  uint64
	// quick is 1 if the key's first quickCounters chunks are all its
	// counters, 0 if the filter is flat or its K is smaller: then
	// Candidates never rules it out.
	quick uint64
}

// NewSet lays out filters, at most MaxSetFilters of them.
func NewSet(filters []*Filter) Set {
	if len(filters) > MaxSetFilters {
		panic("counting: more filters than a Set holds")
	}
	places := make([]place, len(filters))
	for i, f := range filters {
		p := place{
			bits:      unsafe.Pointer(unsafe.SliceData(f.words)),
			stride:    BlockBytes,
			blocks:    f.geometry.Blocks,
			blockSalt: f.blockSalt,
			slotSalt:  f.slotSalt,
		}
		if f.geometry.Flat {
			// A flat region is at most a few blocks: its "block" is its
			// first, which the warming loads and nothing tests.
			p.blocks = 1
		} else if f.geometry.K >= quickCounters {
			p.quick = 1
		}
		if f.presence != nil {
			p.bits, p.stride, p.presence = unsafe.Pointer(unsafe.SliceData(f.presence)), PresenceBytesPerBlock, true
		}
		places[i] = p
	}
	return Set{places: places}
}

// nibbleMask[n] selects counter n of a word, as nibbleShift places it.
var nibbleMask = func() (m [16]uint64) {
	for n := range m {
		m[n] = MaxCounter << nibbleShift(uint(n))
	}
	return m
}()

// isZero is 1 if counter x mod 128 of the block is zero, 0 if not, without
// a branch on it.
func isZero(words *[wordsPerBlock]uint64, x uint64) uint64 {
	c := x & (CountersPerBlock - 1)
	if atomic.LoadUint64(&words[c>>4])&nibbleMask[c&15] == 0 {
		return 1
	}
	return 0
}

// isAbsent is 1 if the presence bit of counter x mod 128 is clear, 0 if
// not, without a branch on it.
func isAbsent(presence *[2]uint64, x uint64) uint64 {
	c := uint(x & (CountersPerBlock - 1))
	return atomic.LoadUint64(&presence[c>>6])>>((c&63)^7)&1 ^ 1
}

// block is the address of what lookups read of the key's block in the
// filter of p.
func (p *place) block(h Hash) unsafe.Pointer {
	hi, _ := bits.Mul64(h.Sum^p.blockSalt, p.blocks)
	// hi < blocks, so the block lies within the region.
	return unsafe.Add(p.bits, hi*p.stride)
}

// Warm loads a word of the key's block in every filter of the set, so that
// their cache misses are under way before any is tested.
func (s *Set) Warm(h Hash) {
	places := s.places
	for i := range places {
		atomic.LoadUint64((*uint64)(places[i].block(h)))
	}
}

// Candidates returns the filters that may hold the key: bit i is set unless
// one of the key's first counters in filter i is zero. It warms every
// block first, then tests without a branch on any counter, so that a key
// held by none of them costs about one trip to memory and no mispredicted
// branches. A caller confirms a set bit with Contains.
func (s *Set) Candidates(h Hash) uint64 {
	s.Warm(h)
	var maybe uint64
	// Oldest last, so that shifting left puts filter i at bit i.
	for i := len(s.places) - 1; i >= 0; i-- {
		p := &s.places[i]
		// The first chunks of the slot stream are counters of the key even
		// where some repeat.
		x := h.Derived ^ p.slotSalt
		var zero uint64
		if p.presence {
			presence := (*[2]uint64)(p.block(h))
			zero = isAbsent(presence, x) | isAbsent(presence, x>>7) | isAbsent(presence, x>>14) | isAbsent(presence, x>>21)
		} else {
			words := (*[wordsPerBlock]uint64)(p.block(h))
			zero = isZero(words, x) | isZero(words, x>>7) | isZero(words, x>>14) | isZero(words, x>>21)
		}
		maybe = maybe<<1 | (zero&p.quick ^ 1)
	}
	return maybe
}
