package counting

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/tallybloom/tallybloom/internal/prefetch"
	"github.com/tallybloom/tallybloom/internal/release"
)

// Nibble masks over a 64-bit counter word: the low bit of every counter.
const lowBits = 0x1111111111111111

// shape places keys: the geometry and the salts that make the sub-filters of
// one chain place the same key independently. Filter and Frozen share it.
type shape struct {
	geometry  Geometry
	blockSalt uint64
	slotSalt  uint64
}

// quickCounters is how many of a key's counters a Set tests in each filter
// before confirming with Contains. A counter of a filter at its capacity is
// zero about half the time, so a key never added passes four with odds of
// about one in sixteen.
const quickCounters = 4

func newShape(g Geometry, salt uint64) shape {
	return shape{
		geometry:  g,
		blockSalt: mix(salt ^ 0xbb67ae8584caa73b),
		slotSalt:  mix(salt ^ 0x3c6ef372fe94f82b),
	}
}

// block maps the hash onto [0, Blocks) with a multiply, not a division.
// Sum is already uniform, and the salt's exclusive or is a bijection, so
// the sub-filters of a chain need no further mixing per key: a lookup in
// ten sub-filters stays short enough that all ten cache misses start before
// the first returns.
func (s *shape) block(h Hash) uint64 {
	hi, _ := bits.Mul64(h.Sum^s.blockSalt, s.geometry.Blocks)
	return hi
}

// chunks takes the key's first counters from Derived itself, salted: it is
// uniform, so only a key that needs more than nine chunks pays for a mix.
func (s *shape) chunks(h Hash) chunkStream { return chunksFrom(h.Derived ^ s.slotSalt) }

// chunksFrom is the chunk stream whose state starts at state.
func chunksFrom(state uint64) chunkStream {
	return chunkStream{state: state, bits: state, left: 64 / 7}
}

func (s *shape) slots(h Hash) slotStream { return slotStream{chunkStream: s.chunks(h)} }

// Filter is one counting Bloom filter over a caller-provided counter region
// and, optionally, its presence bits. The regions must stay valid (mapped)
// while the Filter is in use.
type Filter struct {
	shape
	words []uint64
	// presence is nil, or one bit for each counter, set while the counter is
	// non-zero (see PresenceBytes): what Contains reads, a quarter of the
	// counters' room, so that lookups find it in the cache more often.
	presence []uint64
}

// New returns a Filter over counters, which must be exactly g.Bytes() long,
// and presence, which must be empty or exactly PresenceBytes(g) long, both
// 8-byte aligned. Presence bits must start as the counters are (zero with
// zero counters, or written by RebuildPresence). Distinct salts make the
// sub-filters of one chain place the same key independently.
func New(counters, presence []byte, g Geometry, salt uint64) (*Filter, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if uint64(len(counters)) != g.Bytes() {
		return nil, fmt.Errorf("%w: region of %d bytes for %d blocks", ErrInvalidGeometry, len(counters), g.Blocks)
	}
	if len(presence) != 0 && uint64(len(presence)) != PresenceBytes(g) {
		return nil, fmt.Errorf("%w: %d bytes of presence bits for %d blocks (want %d)", ErrInvalidGeometry, len(presence), g.Blocks, PresenceBytes(g))
	}
	words, err := wordsOf(counters)
	if err != nil {
		return nil, err
	}
	bits, err := wordsOf(presence)
	if err != nil {
		return nil, err
	}
	return &Filter{shape: newShape(g, salt), words: words, presence: bits}, nil
}

// wordsOf is b as 64-bit words, nil for no bytes.
func wordsOf(b []byte) ([]uint64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return nil, fmt.Errorf("%w: region not 8-byte aligned", ErrInvalidGeometry)
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8), nil
}

// Contains reports whether every counter of the key is non-zero: from its
// presence bits, one cache line, if the filter keeps them; else from the
// counters, stopping at the first zero one, so that keys never added usually
// cost one or two loads.
func (f *Filter) Contains(h Hash) bool {
	if f.presence != nil {
		// The block is below Blocks, and presence holds two words a block,
		// so one bounds check covers both.
		presence := (*[2]uint64)(unsafe.Pointer(&f.presence[2*f.block(h)]))
		return presenceContains(presence, h.Derived^f.slotSalt, f.geometry.K)
	}
	if f.geometry.Flat {
		s := f.flatSlots(h)
		for range f.geometry.K {
			c := s.next()
			if atomic.LoadUint64(&f.words[c>>4])>>nibbleShift(c)&MaxCounter == 0 {
				return false
			}
		}
		return true
	}
	return countersContains(f.blockWords(f.block(h)), h.Derived^f.slotSalt, f.geometry.K)
}

// presenceContainsGo reports whether presence holds the presence bit of
// each counter of the key whose slot stream starts at state (h.Derived
// with the filter's salt in), for k counters. It loads the bits first, so
// that a cache miss is under way while the set is drawn.
func presenceContainsGo(presence *[2]uint64, state uint64, k int) bool {
	lo, hi := atomic.LoadUint64(&presence[0]), atomic.LoadUint64(&presence[1])
	want0, want1 := presenceSetAt(state, k)
	return want0&^lo|want1&^hi == 0
}

// countersContainsGo reports whether every counter of words, a block, that
// the key whose slot stream starts at state takes is non-zero, for k
// counters. It tests each counter as the stream draws it, stopping at the
// first zero one.
func countersContainsGo(words *[wordsPerBlock]uint64, state uint64, k int) bool {
	chunks := chunksFrom(state)
	var taken [2]uint64
	for need := k; need > 0; {
		c := chunks.next()
		bit := uint64(1) << (c & 63)
		if taken[c>>6]&bit != 0 {
			continue
		}
		taken[c>>6] |= bit
		if atomic.LoadUint64(&words[c>>4])>>nibbleShift(c)&MaxCounter == 0 {
			return false
		}
		need--
	}
	return true
}

// presenceSet is the key's counters as presence bits of its block: the slot
// stream, each counter drawn again skipped. The two words are values, not
// an array indexed by each chunk, so that they stay in registers: in an
// array every chunk's bit waited for the store of the one before, and a
// lookup in the cache took a ninth longer (docs/PERFORMANCE.md, Lookups).
// It also stores in masks the low bit of each of those counters in each of
// the block's counter words, as setMasks makes them from the set. On
// amd64 presenceDraw draws the set in assembly, as a lookup does, and marks
// the masks as it goes.
func (s *shape) presenceSet(h Hash, masks *[wordsPerBlock]uint64) (lo, hi uint64) {
	return presenceDraw(h.Derived^s.slotSalt, s.geometry.K, masks)
}

// presenceSetAt is presenceSet of the key whose slot stream starts at
// state, for k counters.
func presenceSetAt(state uint64, k int) (lo, hi uint64) {
	// The first K chunks are taken without a branch on each. Most keys draw
	// no counter twice among them, and those chunks are then the set; a key
	// that did goes on down the stream, skipping counters already taken.
	chunks, left := state^sevens, 0
	for need := k; ; {
		n := min(need, 64/7)
		for range n {
			lo, hi = withPresenceBit(lo, hi, chunks)
			chunks >>= 7
		}
		if need -= n; need == 0 {
			left = 64/7 - n
			break
		}
		state += slotStep
		chunks = mix(state) ^ sevens
	}
	for have := bits.OnesCount64(lo) + bits.OnesCount64(hi); have < k; chunks >>= 7 {
		if left == 0 {
			state += slotStep
			chunks, left = mix(state)^sevens, 64/7
		}
		left--
		// A counter already taken sets no new bit and counts none.
		nextLo, nextHi := withPresenceBit(lo, hi, chunks)
		have += bits.OnesCount64((nextLo ^ lo) | (nextHi ^ hi))
		lo, hi = nextLo, nextHi
	}
	return lo, hi
}

// withPresenceBit sets the presence bit of chunk c, already in
// presenceBit's order: bit c&63 of hi where c's bit 6 is set, of lo where
// it is not. The pair comes from a table, so that no branch, and no
// variable shift, depends on the chunk.
func withPresenceBit(lo, hi, c uint64) (uint64, uint64) {
	pair := &presencePairs[c&127]
	return lo | pair[0], hi | pair[1]
}

// presencePairs is, for each chunk c of seven bits, c's presence bit as
// the two words of a block's presence bits.
var presencePairs = func() (pairs [128][2]uint64) {
	for c := range pairs {
		pairs[c][c>>6] = 1 << (c & 63)
	}
	return pairs
}()

// sevens is 7 in every 7-bit chunk of a word: an exclusive or with it
// puts every chunk's counter in presenceBit's order at once.
const sevens = 0x070e1c3870e1c387

// Prefetch asks for the key's block and its presence bits without waiting
// for them. It reads neither: a caller may prefetch a filter whose regions
// are being unmapped (see internal/prefetch). The addresses are computed
// without the slices' bounds checks, which would cost more than the
// requests: a prefetch never faults, wherever it points.
func (f *Filter) Prefetch(h Hash) {
	if f.geometry.Flat {
		return
	}
	counters, presence := f.lines(f.block(h))
	prefetch.Line(counters)
	if presence != nil {
		prefetch.Line(presence)
	}
}

// lines is the address of block's counters and of its presence bits (nil
// without them), computed without bounds checks: for prefetches only.
func (f *Filter) lines(block uint64) (counters, presence unsafe.Pointer) {
	counters = unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), uintptr(block)*BlockBytes)
	if f.presence != nil {
		presence = unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.presence)), uintptr(block)*PresenceBytesPerBlock)
	}
	return counters, presence
}

// warmBlock loads a word of block and one of its presence bits.
func (f *Filter) warmBlock(block uint64) uint64 {
	w := atomic.LoadUint64(&f.words[block*wordsPerBlock])
	if f.presence != nil {
		w ^= atomic.LoadUint64(&f.presenceOf(block)[0])
	}
	return w
}

// Probe is the located counters of one key. In a blocked geometry it is
// the key's block, the low bit of each of its counters in each of the
// block's eight counter words, and its counters as presence bits of the
// block; a change computes every word of the block without a branch on
// which words hold a counter. In a flat geometry it is the words the key's
// counters fall in.
type Probe struct {
	base  uint64                // index of the block's first word, or of words[0]'s
	masks [wordsPerBlock]uint64 // zero for a word that holds none of the key's counters
	set   [2]uint64             // the key's counters as presence bits of its block
	words [wordsPerBlock]uint8  // flat: word index of each mask, from base
	n     int                   // flat: entries in use
	flat  bool
	// held is set by Held, which found every counter of a blocked probe
	// non-zero and kept in ones those that are one, and cleared by
	// Locate and Decrement.
	held bool
	ones [2]uint64
}

// Locate stores in p where the key's counters are, without reading them.
func (f *Filter) Locate(h Hash, p *Probe) {
	if f.geometry.Flat {
		f.locateFlat(h, p)
		return
	}
	// The set is drawn as a lookup draws it, and the masks with it. Every
	// field a blocked probe uses is stored, so nothing is cleared.
	p.base, p.flat, p.held = f.block(h)*wordsPerBlock, false, false
	p.set[0], p.set[1] = f.presenceSet(h, &p.masks)
}

// locateFlat is Locate in a flat geometry, kept apart so that the blocked
// case, nearly every change, has a frame too small to need its stack room
// cleared.
func (f *Filter) locateFlat(h Hash, p *Probe) {
	*p = Probe{flat: true}
	s := f.flatSlots(h)
	for range f.geometry.K {
		c := s.next()
		word, i := uint8(c>>4), 0
		for i < p.n && p.words[i] != word {
			i++
		}
		p.words[i], p.n = word, max(p.n, i+1)
		p.masks[i] |= 1 << nibbleShift(c)
	}
}

// setMasks stores in masks the low bit of each counter of set, a block's
// presence bits, in each of the block's counter words: what addWordBits
// does, undone. The assembly on amd64 marks the masks from the same table
// as it draws the counters instead.
func setMasks(masks *[wordsPerBlock]uint64, set [2]uint64) {
	*masks = [wordsPerBlock]uint64{}
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			place := &counterLows[(64*w+bits.TrailingZeros64(word))&127]
			masks[place[0]/8&(wordsPerBlock-1)] |= place[1]
		}
	}
}

// WarmProbe loads a word of the probe's block and one of its presence bits,
// so that both cache misses are under way together before a change reads
// them: the undo record of a change is sealed with a store that, where it
// is sync/atomic's (see internal/release), is a full fence, and a miss that
// starts only after it waits for the one before. An add has usually asked
// for both lines before it took the lock (Prefetch); this load starts them
// where Prefetch does nothing. It returns what it loaded, which callers may
// ignore.
func (f *Filter) WarmProbe(p *Probe) uint64 {
	if p.flat {
		return 0
	}
	return f.warmBlock(p.base / wordsPerBlock)
}

// blockOf is the block of a probe of a blocked geometry.
func (f *Filter) blockOf(p *Probe) *[wordsPerBlock]uint64 {
	return (*[wordsPerBlock]uint64)(f.words[p.base : p.base+wordsPerBlock])
}

// Spans calls fn with the byte offset and length of each part of the region
// the probe's changes write: its block, or in a flat geometry each word.
func (p *Probe) Spans(fn func(offset uint64, length int)) {
	if !p.flat {
		fn(p.base*8, BlockBytes)
		return
	}
	for i := range p.n {
		fn((p.base+uint64(p.words[i]))*8, 8)
	}
}

// Test reports whether every counter of the probe is non-zero.
func (f *Filter) Test(p *Probe) bool {
	if !p.flat {
		missing := f.presenceMissing(p)
		zero, _ := keyCounters(f.blockOf(p), &p.set)
		return !zero && missing == 0
	}
	for i := range p.n {
		if m := p.masks[i]; m != 0 && nonZero(atomic.LoadUint64(&f.words[p.base+uint64(p.words[i])]))&m != m {
			return false
		}
	}
	return true
}

// Held reports what Test does, and keeps in p what a Decrement of p needs,
// so that one that follows with no change between reads the key's
// counters no more: a remove tests its key before it seals its undo
// record, and only then lowers the counters. Read twice, the counters
// cost a remove 128 instructions and about 5% of its time at 1M keys
// (docs/PERFORMANCE.md, Adds).
func (f *Filter) Held(p *Probe) bool {
	if p.flat {
		return f.Test(p)
	}
	missing := f.presenceMissing(p)
	zero, ones := keyCounters(f.blockOf(p), &p.set)
	p.held, p.ones = !zero && missing == 0, ones
	return p.held
}

// presenceMissing is the key's presence bits that a blocked probe's block
// lacks, none without presence bits. Test and Held load them with the
// counters so that their cache miss overlaps the counters': a change that
// follows (Decrement) writes both, and an undo record sealed behind a
// fence (as in WarmProbe) would otherwise wait for one miss and then the
// other. Outside a change in flight the bits agree with the counters.
func (f *Filter) presenceMissing(p *Probe) uint64 {
	if f.presence == nil {
		return 0
	}
	presence := f.presenceOf(p.base / wordsPerBlock)
	return p.set[0]&^atomic.LoadUint64(&presence[0]) | p.set[1]&^atomic.LoadUint64(&presence[1])
}

// Increment adds one to every counter of the probe that is not saturated and
// returns how many counters went from zero to one.
func (f *Filter) Increment(p *Probe) (raised int) {
	if !p.flat {
		// Every word of the block, with no branch on which words hold a
		// counter of the key: a word that holds none is stored back as it
		// was, within the block the undo record saved.
		words := f.blockOf(p)
		if f.presence != nil {
			// The presence bits are set before the counters are raised:
			// a lookup may then find the key a moment early, as it may
			// while the counters are half raised. Between changes a bit
			// is set exactly where its counter is non-zero, so the bits
			// that were clear are the counters that leave zero.
			was := raiseBlock(words, &p.masks, f.presenceOf(p.base/wordsPerBlock), &p.set)
			return bits.OnesCount64(p.set[0]&^was[0]) + bits.OnesCount64(p.set[1]&^was[1])
		}
		// Without presence bits, the pass that raises the counters finds
		// the ones that leave zero, as it reads them.
		zeros := raiseBlockZeros(words, &p.masks)
		return bits.OnesCount64(zeros[0]) + bits.OnesCount64(zeros[1])
	}
	for i := range p.n {
		m := p.masks[i]
		if m == 0 {
			continue
		}
		word := &f.words[p.base+uint64(p.words[i])]
		w := atomic.LoadUint64(word)
		raised += bits.OnesCount64(m &^ nonZero(w))
		// Saturated counters are left alone; the rest are below 15, so the
		// addition cannot carry into a neighbour.
		release.Store64(word, w+m&^saturatedBits(w))
	}
	return raised
}

// Decrement subtracts one from every counter of the probe that is not
// saturated, only if all of them are non-zero. It returns how many counters
// went from one to zero, and false (changing nothing) if any was zero.
// After Held found the key, with no change between, it takes the
// counters' values from p.
func (f *Filter) Decrement(p *Probe) (cleared int, ok bool) {
	if !p.flat {
		// The key's counters are read one by one, from its set: the
		// counters that reach zero then come as the presence bits to
		// clear. Tested word by word, the block gave them as flags in
		// its counter words, which took longer to gather into presence
		// bits than the whole test takes this way.
		words := f.blockOf(p)
		gone := p.ones
		if p.held {
			p.held = false
			checkHeld(words, p)
		} else {
			var zero bool
			if zero, gone = keyCounters(words, &p.set); zero {
				return 0, false
			}
		}
		var presence *[2]uint64
		var was [2]uint64
		if f.presence != nil {
			// Loaded before the counters' stores, as in Increment.
			presence = f.presenceOf(p.base / wordsPerBlock)
			was = [2]uint64{atomic.LoadUint64(&presence[0]), atomic.LoadUint64(&presence[1])}
		}
		lowerBlock(words, &p.masks)
		if cleared = bits.OnesCount64(gone[0]) + bits.OnesCount64(gone[1]); cleared > 0 && presence != nil {
			// Only the writer changes presence bits, so was is current.
			release.Store64(&presence[0], was[0]&^gone[0])
			release.Store64(&presence[1], was[1]&^gone[1])
		}
		return cleared, true
	}
	if !f.Test(p) {
		return 0, false
	}
	for i := range p.n {
		m := p.masks[i]
		if m == 0 {
			continue
		}
		word := &f.words[p.base+uint64(p.words[i])]
		w := atomic.LoadUint64(word)
		cleared += bits.OnesCount64(m & ones(w))
		// Every probed counter is at least 1, so the subtraction cannot borrow.
		release.Store64(word, w-m&^saturatedBits(w))
	}
	return cleared, true
}

// keyCounters reads the counters of words, a block, that set names (the
// key's counters as presence bits of its block, as Locate draws them), and
// reports whether any is zero and, as bits of the set, which are one. It
// reads K counters, not the block's 128, and needs no gathering of flags.
func keyCounters(words *[wordsPerBlock]uint64, set *[2]uint64) (zero bool, one [2]uint64) {
	zero, one[0] = keyCountersOf(words, set[0], (*[64][2]uint64)(counterPlaces[:64]))
	if !zero {
		zero, one[1] = keyCountersOf(words, set[1], (*[64][2]uint64)(counterPlaces[64:]))
	}
	return zero, one
}

// keyCountersOf is keyCounters for one word of the set, whose bits' places
// are places.
func keyCountersOf(words *[wordsPerBlock]uint64, set uint64, places *[64][2]uint64) (zero bool, one uint64) {
	for ; set != 0; set &= set - 1 {
		place := &places[bits.TrailingZeros64(set)&63]
		mask := place[1]
		counter := atomic.LoadUint64(&words[place[0]>>3&(wordsPerBlock-1)]) & mask
		if counter == 0 {
			return true, 0
		}
		// Without a branch: in a filled filter about half the counters of
		// a key are 1, and a branch on it would often be mispredicted.
		bit := set & -set
		if counter != mask&lowBits {
			bit = 0
		}
		one |= bit
	}
	return false, one
}

// counterPlaces is, for each of a block's presence bits (as presencePairs
// is indexed), where its counter lies in the block: the byte offset of its
// word, and the mask of its nibble there. keyCounters reads it, and so
// does the assembly on amd64.
var counterPlaces = func() (places [128][2]uint64) {
	for x := range places {
		c := uint(x) ^ 7
		places[x] = [2]uint64{8 * uint64(c>>4), MaxCounter << nibbleShift(c)}
	}
	return places
}()

// counterLows is counterPlaces with the low bit of each counter's nibble
// for its mask: where presenceDraw marks the counter in a probe's masks.
var counterLows = func() (lows [128][2]uint64) {
	for x, place := range counterPlaces {
		lows[x] = [2]uint64{place[0], place[1] & lowBits}
	}
	return lows
}()

// RebuildPresence sets the presence bits from the counters, for a region
// whose counters were written from elsewhere (an import). It reads every
// counter and must not run during changes.
func (f *Filter) RebuildPresence() {
	f.RebuildPresenceOf(0, f.geometry.Bytes())
}

// RebuildPresenceOf sets the presence bits of the blocks that hold bytes
// [offset, offset+length) of the counters from those blocks' counters: after
// counters were written back from an undo record, which saves the counters
// a change writes but not the presence bits, since they follow from them.
// It must not run during changes.
func (f *Filter) RebuildPresenceOf(offset, length uint64) {
	if f.presence == nil || length == 0 || offset >= f.geometry.Bytes() {
		return
	}
	last := min(offset+length, f.geometry.Bytes()) - 1
	for block := offset / BlockBytes; block <= last/BlockBytes; block++ {
		want, presence := blockPresence(f.blockWords(block)), f.presenceOf(block)
		release.Store64(&presence[0], want[0])
		release.Store64(&presence[1], want[1])
	}
}

// StalePresence counts the blocks whose presence bits do not match their
// counters. It reads every counter: a check, not a hot path.
func (f *Filter) StalePresence() (blocks uint64) {
	if f.presence == nil {
		return 0
	}
	for block := range f.geometry.Blocks {
		want, presence := blockPresence(f.blockWords(block)), f.presenceOf(block)
		if atomic.LoadUint64(&presence[0]) != want[0] || atomic.LoadUint64(&presence[1]) != want[1] {
			blocks++
		}
	}
	return blocks
}

// blockPresence is the presence bits of a block's counters.
func blockPresence(words *[wordsPerBlock]uint64) (presence [2]uint64) {
	for i := range words {
		addWordBits(&presence, i, nonZero(atomic.LoadUint64(&words[i])))
	}
	return presence
}

// addWordBits sets in presence the bits of counter word i of a block, given
// as flags, the low bit of each nibble (as nonZero gives them): they are
// bytes 2(i%4) and 2(i%4)+1 of presence word i/4, the word's first eight
// counters in the first byte, counter 0 at its top bit.
func addWordBits(presence *[2]uint64, i int, flags uint64) {
	presence[i/4] |= uint64(presenceFlags(flags)) << (16 * (i % 4))
}

// presenceFlags turns flags, the low bit of each nibble of a counter word
// (as nonZero gives them), into the word's sixteen presence bits: counter c
// at bit 7-c of byte c/8, the order of the frozen form written as a
// little-endian uint16. Counter c is the nibble at 4(c^1) (nibbleShift), so
// the nibble at 4n goes to bit n^6; moving byte b of flags to byte b^3,
// which moves the nibble at 4n to 4(n^6), leaves a plain gather of the low
// bit of each nibble.
func presenceFlags(flags uint64) uint16 {
	x := bits.RotateLeft64(bits.ReverseBytes64(flags), 32)
	x = (x | x>>3) & 0x0303030303030303
	x = (x | x>>6) & 0x000f000f000f000f
	x = (x | x>>12) & 0x000000ff000000ff
	return uint16(x | x>>24)
}

func (f *Filter) presenceOf(block uint64) *[2]uint64 {
	return (*[2]uint64)(f.presence[block*2:])
}

// Counter returns counter i of the region.
func (f *Filter) Counter(i uint64) uint8 {
	return uint8(atomic.LoadUint64(&f.words[i>>4]) >> nibbleShift(uint(i&15)) & MaxCounter)
}

// Tally sums the counters of the region and counts the non-zero and saturated
// ones. It reads every counter: a check, not a hot path.
func (f *Filter) Tally() (sum, nonZeroCounters, saturatedCounters uint64) {
	for i := range f.words {
		w := atomic.LoadUint64(&f.words[i])
		nonZeroCounters += uint64(bits.OnesCount64(nonZero(w)))
		saturatedCounters += uint64(bits.OnesCount64(saturated(w)))
		for ; w != 0; w >>= 4 {
			sum += w & MaxCounter
		}
	}
	return sum, nonZeroCounters, saturatedCounters
}

func (f *Filter) blockWords(block uint64) *[wordsPerBlock]uint64 {
	return (*[wordsPerBlock]uint64)(f.words[block*wordsPerBlock:])
}

func (s *shape) flatSlots(h Hash) flatStream {
	return flatStream{state: h.Derived ^ s.slotSalt, counters: uint(s.geometry.Counters())}
}

// flatStream yields a key's distinct counters over a whole flat region of at
// most 1024 counters: 10-bit chunks of a mixed state, rejecting those past
// the region and those already taken.
type flatStream struct {
	state    uint64
	bits     uint64
	left     int
	counters uint
	taken    [MaxFlatBlocks * CountersPerBlock / 64]uint64
}

func (s *flatStream) next() uint {
	for {
		if s.left == 0 {
			s.state += 0x9e3779b97f4a7c15
			s.bits, s.left = mix(s.state), 64/10
		}
		c := uint(s.bits & (MaxFlatBlocks*CountersPerBlock - 1))
		s.bits >>= 10
		s.left--
		if c >= s.counters {
			continue
		}
		if bit := uint64(1) << (c & 63); s.taken[c>>6]&bit == 0 {
			s.taken[c>>6] |= bit
			return c
		}
	}
}

// slotStep advances a slot stream's state between mixes.
const slotStep = 0x9e3779b97f4a7c15

// chunkStream yields the 7-bit chunks of a key's slot stream: of the salted
// state, then of successive mixes of it. It is small enough to stay in
// registers.
type chunkStream struct {
	state uint64
	bits  uint64
	left  int
}

func (s *chunkStream) next() uint {
	if s.left == 0 {
		s.state += slotStep
		s.bits, s.left = mix(s.state), 64/7
	}
	c := uint(s.bits & (CountersPerBlock - 1))
	s.bits >>= 7
	s.left--
	return c
}

// slotStream yields a key's distinct counters within its block: its chunks,
// skipping counters already taken.
type slotStream struct {
	chunkStream
	taken [2]uint64
}

func (s *slotStream) next() uint {
	for {
		c := s.chunkStream.next()
		if bit := uint64(1) << (c & 63); s.taken[c>>6]&bit == 0 {
			s.taken[c>>6] |= bit
			return c
		}
	}
}

// presenceBit is the bit of counter c (0..127) of a block within its
// presence word c/64: bit c%64 in most-significant-first order within each
// byte of the little-endian word, so that the presence bits of a region are
// its frozen form (see Freeze) byte for byte.
func presenceBit(c uint) uint64 { return 1 << ((c & 63) ^ 7) }

// nibbleShift is the bit offset of counter c (0..15) within its little-endian
// word: byte c/2, high nibble for even c.
func nibbleShift(c uint) uint { return ((c & 15) ^ 1) << 2 }

// nonZero has the low bit of every non-zero counter of w set.
func nonZero(w uint64) uint64 {
	pairs := w | w>>1 // bit 0 of a nibble: bits 0 or 1; bit 2: bits 2 or 3
	return (pairs | pairs>>2) & lowBits
}

// saturated has the low bit of every counter of w that is 15 set.
func saturated(w uint64) uint64 { return saturatedBits(w) & lowBits }

// saturatedBits has the low bit of every counter of w that is 15 set, and
// other bits besides: a caller that ands it with flags (the low bit of each
// nibble, as nonZero gives them) needs no mask of its own.
func saturatedBits(w uint64) uint64 {
	pairs := w & (w >> 1) // as in nonZero
	return pairs & (pairs >> 2)
}

// ones has the low bit of every counter of w that is exactly 1 set.
func ones(w uint64) uint64 { return w &^ (w >> 1) &^ (w >> 2) &^ (w >> 3) & lowBits }

// ContainsBatch appends Contains of every hash to out. It asks for every
// hash's presence bits (or block) before it tests any, so that their cache
// misses are under way together, and a filter that keeps presence bits
// keeps each address for the test. A prefetch, not a load: it does not
// hold the processor up while the miss is outstanding.
func (f *Filter) ContainsBatch(hashes []Hash, out []bool) []bool {
	if f.presence == nil {
		for _, h := range hashes {
			f.Prefetch(h)
		}
		for _, h := range hashes {
			out = append(out, f.Contains(h))
		}
		return out
	}
	const group = 64
	var places [group]*[2]uint64
	for len(hashes) > 0 {
		n := min(group, len(hashes))
		for i, h := range hashes[:n] {
			places[i] = f.presenceOf(f.block(h))
			prefetch.Line(unsafe.Pointer(places[i]))
		}
		for i, h := range hashes[:n] {
			out = append(out, presenceContains(places[i], h.Derived^f.slotSalt, f.geometry.K))
		}
		hashes = hashes[n:]
	}
	return out
}
