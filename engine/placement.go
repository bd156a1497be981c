package engine

import (
	"fmt"

	"github.com/tallybloom/tallybloom/counting"
)

// Placement finds a key's counters in sub-filters kept somewhere else (a
// Redis string): which bytes of each sub-filter to fetch, and whether the
// fetched bytes hold the key. The key is hashed once for all sub-filters. It
// is safe for concurrent use.
type Placement struct {
	hasher counting.Hasher
	shapes []*counting.Shape // as the sub-filters are given
}

// NewPlacement places keys for a filter of cfg whose sub-filters are subs
// (level and geometry are used). Parts from an untrusted source are checked:
// a bad geometry is ErrCorrupt.
func NewPlacement(cfg Config, subs []SubFilterStats) (*Placement, error) {
	p := &Placement{hasher: counting.NewHasher(cfg.Seed)}
	for i, sub := range subs {
		s, err := counting.NewShape(sub.geometry(), uint64(sub.Level))
		if err != nil {
			return nil, fmt.Errorf("%w: sub-filter %d: %v", ErrCorrupt, i, err)
		}
		p.shapes = append(p.shapes, s)
	}
	return p, nil
}

// Placed is a key hashed for a Placement.
type Placed struct {
	p *Placement
	h counting.Hash
}

// Place hashes key.
func (p *Placement) Place(key []byte) Placed { return Placed{p, p.hasher.Key(key)} }

// PlaceString hashes a string key.
func (p *Placement) PlaceString(key string) Placed { return Placed{p, p.hasher.String(key)} }

// Range is the byte range of sub-filter i's counters that holds the key.
func (k Placed) Range(i int) (offset, length uint64) { return k.p.shapes[i].Locate(k.h) }

// Holds reports whether b, the bytes of Range(i), hold the key: every one
// of its counters non-zero. Bytes missing past the end of b count as zero.
func (k Placed) Holds(i int, b []byte) bool { return k.p.shapes[i].Test(k.h, b) }
