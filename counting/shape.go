package counting

// Shape places keys without a counter region: where a key's counters are,
// and whether given bytes hold them all non-zero. A process that keeps the
// counters elsewhere (a Redis string) fetches only the bytes Locate names.
type Shape struct{ shape }

// NewShape is the placement of a filter of geometry g with salt, the same as
// New's.
func NewShape(g Geometry, salt uint64) (*Shape, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &Shape{newShape(g, salt)}, nil
}

// Locate returns the byte range of the region that holds the key's
// counters: its block, or the whole region of a flat geometry.
func (s *Shape) Locate(h Hash) (offset, length uint64) {
	if s.geometry.Flat {
		return 0, s.geometry.Bytes()
	}
	return s.block(h) * BlockBytes, BlockBytes
}

// Test reports whether every counter of the key is non-zero in b, the bytes
// of the range Locate returned (shorter bytes read as zeros past their end,
// as Redis returns them).
func (s *Shape) Test(h Hash, b []byte) bool {
	counter := func(c uint) byte {
		if int(c/2) >= len(b) {
			return 0
		}
		if c%2 == 0 {
			return b[c/2] >> 4
		}
		return b[c/2] & 0x0f
	}
	if s.geometry.Flat {
		slots := s.flatSlots(h)
		for range s.geometry.K {
			if counter(slots.next()) == 0 {
				return false
			}
		}
		return true
	}
	slots := s.slots(h)
	for range s.geometry.K {
		if counter(slots.next()) == 0 {
			return false
		}
	}
	return true
}
