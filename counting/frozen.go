package counting

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// FrozenBytes is the size of the frozen form of a filter of geometry g: one
// bit per counter, a quarter of the counters' size.
func FrozenBytes(g Geometry) uint64 { return g.Counters() / 8 }

// Freeze writes the filter's frozen form into dst, which must be
// FrozenBytes long: bit i is set when counter i is non-zero. Bit i is in byte
// i/8, most significant bit first (the order of Redis GETBIT). The presence
// bits are laid out so, and outside a change in flight they agree with the
// counters: a filter that keeps them copies them, a quarter of the bytes.
func (f *Filter) Freeze(dst []byte) {
	if f.presence != nil {
		for i := range f.presence {
			binary.LittleEndian.PutUint64(dst[8*i:], atomic.LoadUint64(&f.presence[i]))
		}
		return
	}
	for i := range f.words {
		binary.LittleEndian.PutUint16(dst[2*i:], presenceFlags(nonZero(atomic.LoadUint64(&f.words[i]))))
	}
}

// Frozen is a read-only 1-bit Bloom filter: the frozen form of a Filter,
// answering Contains exactly as the Filter did when it was frozen.
type Frozen struct {
	bits      []byte
	geometry  Geometry
	blockSalt uint64
	slotSalt  uint64
}

// NewFrozen returns a Frozen over bits, which must be FrozenBytes(g) long;
// salt must be the salt of the Filter it was frozen from.
func NewFrozen(bits []byte, g Geometry, salt uint64) (*Frozen, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if uint64(len(bits)) != FrozenBytes(g) {
		return nil, fmt.Errorf("%w: %d bytes of bits for %d blocks", ErrInvalidGeometry, len(bits), g.Blocks)
	}
	shape := newShape(g, salt)
	return &Frozen{bits: bits, geometry: g, blockSalt: shape.blockSalt, slotSalt: shape.slotSalt}, nil
}

// Contains reports whether every bit of the key is set.
func (z *Frozen) Contains(h Hash) bool {
	s := shape{geometry: z.geometry, blockSalt: z.blockSalt, slotSalt: z.slotSalt}
	if z.geometry.Flat {
		slots := s.flatSlots(h)
		for range z.geometry.K {
			c := slots.next()
			if z.bits[c/8]&(0x80>>(c%8)) == 0 {
				return false
			}
		}
		return true
	}
	block := z.bits[s.block(h)*CountersPerBlock/8:][:CountersPerBlock/8]
	slots := s.slots(h)
	for range z.geometry.K {
		c := slots.next()
		if block[c/8]&(0x80>>(c%8)) == 0 {
			return false
		}
	}
	return true
}
