package scaling

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/internal/release"
)

// Space is the storage of one sub-filter: its counters and presence bits,
// zero when allocated, and its tallies.
type Space interface {
	Counters() []byte
	// Presence is the sub-filter's presence bits (see
	// counting.PresenceBytes), or nothing for a sub-filter without them.
	Presence() []byte
	// Tallies is a MetaSize-byte, 8-byte aligned area that outlives a crash
	// like the counters do.
	Tallies() []byte
}

// Storage gives the chain room for new sub-filters and persists its directory.
// The caller of a change brackets it (for example with an undo record); the
// chain tells Storage what the change will write before writing it.
type Storage interface {
	// Allocate returns zeroed room for a sub-filter of geometry g at level.
	Allocate(level int, g counting.Geometry) (Space, error)
	// Publish makes subs, oldest first, the chain's directory as part of the
	// change in flight.
	Publish(subs []*SubFilter)
	// Touch is called before the change in flight writes the counters of
	// probe p (p.Spans names them) and the tallies of sub, so their prior
	// content can be saved. p is the chain's own and must not be kept.
	Touch(sub *SubFilter, p *counting.Probe)
}

// The tallies' layout. Never change these: they are part of the file format.
//
//	0                8                16               24               32
//	+----------------+----------------+----------------+----------------+
//	| count u64      | max id u64     | non-zero u64   | zero           |
//	+----------------+----------------+----------------+----------------+
const (
	talliesCount   = 0
	talliesMaxID   = 8
	talliesNonZero = 16
	// MetaUsed is how many of the tallies' bytes are in use; the rest of
	// MetaSize is zero.
	MetaUsed = 24
	// MetaSize is the size of one sub-filter's tallies.
	MetaSize = 32
)

// Entry is what the directory records of a sub-filter.
type Entry struct {
	Level    int
	FirstID  uint64
	Capacity uint64
	Geometry counting.Geometry
}

// SubFilter is one counting filter of the chain.
type SubFilter struct {
	Entry
	filter *counting.Filter
	space  Space
	// count, maxID and nonZero live in the space's tallies: adds minus
	// removes, the highest id ever added, and the non-zero counters.
	count, maxID, nonZero *uint64
}

// Attach builds a sub-filter over space from its directory entry, checking the
// entry against the space so that a damaged directory cannot make the filter
// reach outside it.
func Attach(e Entry, space Space) (*SubFilter, error) {
	if e.Level < 0 || e.Level >= MaxSubFilters || e.Capacity == 0 {
		return nil, fmt.Errorf("%w: sub-filter level %d, capacity %d", ErrInvalidParams, e.Level, e.Capacity)
	}
	if space == nil {
		return nil, fmt.Errorf("%w: a nil Space", ErrInvalidParams)
	}
	tallies := space.Tallies()
	if len(tallies) < MetaSize || uintptr(unsafe.Pointer(unsafe.SliceData(tallies)))%8 != 0 {
		return nil, fmt.Errorf("%w: tallies of %d bytes", ErrInvalidParams, len(tallies))
	}
	f, err := counting.New(space.Counters(), space.Presence(), e.Geometry, uint64(e.Level))
	if err != nil {
		return nil, err
	}
	return &SubFilter{
		Entry:   e,
		filter:  f,
		space:   space,
		count:   (*uint64)(unsafe.Pointer(&tallies[talliesCount])),
		maxID:   (*uint64)(unsafe.Pointer(&tallies[talliesMaxID])),
		nonZero: (*uint64)(unsafe.Pointer(&tallies[talliesNonZero])),
	}, nil
}

// Space is the sub-filter's storage.
func (s *SubFilter) Space() Space { return s.space }

// Count is the number of adds minus removes.
func (s *SubFilter) Count() uint64 { return atomic.LoadUint64(s.count) }

// MaxID is the highest id ever added.
func (s *SubFilter) MaxID() uint64 { return atomic.LoadUint64(s.maxID) }

// NonZero is the number of non-zero counters.
func (s *SubFilter) NonZero() uint64 { return atomic.LoadUint64(s.nonZero) }

// Overfilled reports whether the sub-filter holds more than its capacity.
func (s *SubFilter) Overfilled() bool { return s.Count() > s.Capacity }

// Filter is the sub-filter's counting filter.
func (s *SubFilter) Filter() *counting.Filter { return s.filter }

// EstimatedKeys estimates the distinct keys held, from the non-zero
// counters.
func (s *SubFilter) EstimatedKeys() float64 { return s.Geometry.EstimatedKeys(s.NonZero()) }

// ExpectedFalsePositiveRate is the false-positive rate the sub-filter is
// expected to have at its current count.
func (s *SubFilter) ExpectedFalsePositiveRate() float64 {
	return s.Geometry.FalsePositiveRate(s.Count())
}

func (s *SubFilter) resetTallies() {
	release.Store64(s.count, 0)
	release.Store64(s.maxID, 0)
	release.Store64(s.nonZero, 0)
}
